package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/limiter"
)

// Tests of the two engine limits, N (Slots) and W (WaitingLimit), and of
// changing N, W and Q at run time. They run scripts of events on a
// limiter in a synctest bubble and check, after every event, which
// waiters it admitted and the gauges.

// request is one AcquireRequest running in its own goroutine; unlike
// client, it hands its Permit to the test, which reports the first token
// and releases as the script says.
type request struct {
	done     chan acquired
	out      *acquired
	onQueued atomic.Int32
	cancel   context.CancelFunc
}

type acquired struct {
	p   *limiter.Permit
	err error
}

func startRequest(l *limiter.Limiter, req limiter.Request) *request {
	ctx, cancel := context.WithCancel(context.Background())
	r := &request{done: make(chan acquired, 1), cancel: cancel}
	req.OnQueued = func() { r.onQueued.Add(1) }
	go func() {
		p, err := l.AcquireRequest(ctx, req)
		r.done <- acquired{p, err}
	}()
	return r
}

// returned reports the request's outcome if AcquireRequest has returned.
func (r *request) returned() (acquired, bool) {
	if r.out != nil {
		return *r.out, true
	}
	select {
	case a := <-r.done:
		r.out = &a
		return a, true
	default:
		return acquired{}, false
	}
}

// step is one event of a script: "acquire" (a new plain request,
// numbered from 0 in the order of the acquire steps), "first i"
// (Permit.FirstToken of request i), "release i", "set" (SetLimits(lim))
// or "slots" (SetSlots(lim.Slots)).
type step struct {
	do  string
	lim limiter.Limits
	// want is, for acquire, "direct", "queued" or "full"; for set and
	// slots, "" or a fragment of the error.
	want string
	// admits are the queued requests this step admits, in any order.
	admits []int
	// holding, prefilling and waiting are the gauges after the step.
	holding, prefilling, waiting int
}

// runScript runs steps on a limiter made with opts, in a synctest bubble.
func runScript(t *testing.T, opts limiter.Options, steps []step) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		t.Helper()
		l := newLimiter(t, opts)
		lim := limiter.Limits{Slots: opts.Slots, WaitingLimit: opts.WaitingLimit, QueueLen: opts.QueueLen}
		var reqs []*request
		defer func() { // should a check fail, its waiters leave too
			for _, r := range reqs {
				r.cancel()
			}
		}()
		queued := map[int]bool{} // waiting, not yet admitted
		var direct, admitted, full uint64
		for n, st := range steps {
			var fresh []int
			op, arg, _ := strings.Cut(st.do, " ")
			var i int
			if arg != "" {
				if _, err := fmt.Sscan(arg, &i); err != nil || i >= len(reqs) {
					t.Fatalf("step %d %q: bad request number", n, st.do)
				}
			}
			permit := func() *limiter.Permit {
				a, ok := reqs[i].returned()
				if !ok || a.p == nil {
					t.Fatalf("step %d %q: request %d holds no permit", n, st.do, i)
				}
				return a.p
			}
			switch op {
			case "acquire":
				r := startRequest(l, limiter.Request{})
				reqs = append(reqs, r)
				synctest.Wait()
				a, ok := r.returned()
				got := "queued"
				switch {
				case ok && a.err == nil && r.onQueued.Load() == 0:
					got = "direct"
					direct++
				case ok && errors.Is(a.err, limiter.ErrQueueFull) && r.onQueued.Load() == 0:
					got = "full"
					full++
				case ok:
					got = fmt.Sprintf("%v (permit %t, OnQueued %d)", a.err, a.p != nil, r.onQueued.Load())
				case r.onQueued.Load() == 1:
					queued[len(reqs)-1] = true
				}
				if got != st.want {
					t.Fatalf("step %d: request %d is %s, want %s", n, len(reqs)-1, got, st.want)
				}
			case "first":
				permit().FirstToken()
			case "release":
				permit().Release()
			case "set", "slots":
				var err error
				next := st.lim
				if op == "set" {
					err = l.SetLimits(st.lim)
				} else {
					err = l.SetSlots(st.lim.Slots)
					next = lim
					next.Slots = st.lim.Slots
				}
				switch {
				case st.want == "" && err != nil:
					t.Fatalf("step %d: %s %+v: %v", n, op, st.lim, err)
				case st.want != "" && (err == nil || !strings.Contains(err.Error(), st.want)):
					t.Fatalf("step %d: %s %+v = %v, want an error containing %q", n, op, st.lim, err, st.want)
				case err == nil:
					lim = next
				}
			default:
				t.Fatalf("step %d: unknown %q", n, st.do)
			}
			synctest.Wait()
			for _, q := range slices.Sorted(maps.Keys(queued)) {
				a, ok := reqs[q].returned()
				if !ok {
					continue
				}
				if a.err != nil {
					t.Fatalf("step %d %q: queued request %d returned %v", n, st.do, q, a.err)
				}
				fresh = append(fresh, q)
				delete(queued, q)
				admitted++
			}
			if want := slices.Sorted(slices.Values(st.admits)); !slices.Equal(fresh, want) {
				t.Fatalf("step %d %q admitted %v, want %v", n, st.do, fresh, want)
			}
			s := l.Stats()
			if s.Holding != st.holding || s.Prefilling != st.prefilling || s.Waiting != st.waiting {
				t.Fatalf("step %d %q: holding, prefilling, waiting = %d, %d, %d; want %d, %d, %d",
					n, st.do, s.Holding, s.Prefilling, s.Waiting, st.holding, st.prefilling, st.waiting)
			}
			if got := l.Limits(); got != lim {
				t.Fatalf("step %d %q: Limits() = %+v, want %+v", n, st.do, got, lim)
			}
			if err := l.CheckInvariants(); err != nil {
				t.Fatalf("step %d %q: %v", n, st.do, err)
			}
		}
		last := steps[len(steps)-1]
		checkStats(t, l, limiter.Stats{
			Slots: lim.Slots, WaitingLimit: lim.WaitingLimit, QueueLen: lim.QueueLen, QueueTimeout: opts.QueueTimeout,
			Holding: last.holding, Prefilling: orNone(last.prefilling), Waiting: last.waiting,
			AdmittedDirect: direct, AdmittedQueued: admitted, RejectedFull: full,
		})
		// Clean up: the waiters leave, the holders release.
		for _, r := range reqs {
			r.cancel()
		}
		synctest.Wait()
		for _, r := range reqs {
			if a, ok := r.returned(); ok && a.p != nil {
				a.p.Release()
			}
		}
		if s := l.Stats(); s.Holding != 0 || s.Prefilling != 0 || s.Waiting != 0 {
			t.Fatalf("after cleaning up: %+v", s)
		}
	})
}

// orNone is checkStats's way of asking for a Prefilling of n, 0 included.
func orNone(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// TestWaitingLimit checks W: a request is admitted only with room under
// both N and W; FirstToken frees the waiting place once, Release frees
// the slot and, without FirstToken, the waiting place too; and each freed
// place admits a waiter only if the other limit has room as well.
func TestWaitingLimit(t *testing.T) {
	tests := []struct {
		name  string
		opts  limiter.Options
		steps []step
	}{
		{
			name: "N=8 W=2 Q=4: W queues the third request though N has room",
			opts: limiter.Options{Slots: 8, WaitingLimit: 2, QueueLen: 4},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "direct", holding: 2, prefilling: 2},
				{do: "acquire", want: "queued", holding: 2, prefilling: 2, waiting: 1},
				{do: "acquire", want: "queued", holding: 2, prefilling: 2, waiting: 2},
				// The first token of request 0 frees its waiting place: the
				// oldest waiter takes it.
				{do: "first 0", admits: []int{2}, holding: 3, prefilling: 2, waiting: 1},
				// Release without FirstToken frees both places.
				{do: "release 1", admits: []int{3}, holding: 3, prefilling: 2},
				// Request 0 holds only its slot now.
				{do: "release 0", holding: 2, prefilling: 2},
				{do: "first 2", holding: 2, prefilling: 1},
				{do: "first 3", holding: 2, prefilling: 0},
				{do: "acquire", want: "direct", holding: 3, prefilling: 1},
				{do: "release 2", holding: 2, prefilling: 1},
				{do: "release 3", holding: 1, prefilling: 1},
			},
		},
		{
			name: "FirstToken twice or after Release does nothing",
			opts: limiter.Options{Slots: 2, WaitingLimit: 1, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "first 0", admits: []int{1}, holding: 2, prefilling: 1},
				// Would free request 1's waiting place if it counted.
				{do: "first 0", holding: 2, prefilling: 1},
				{do: "release 0", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "first 0", holding: 1, prefilling: 1, waiting: 1},
				{do: "release 0", holding: 1, prefilling: 1, waiting: 1},
				// Release without FirstToken frees both: request 2 is in.
				{do: "release 1", admits: []int{2}, holding: 1, prefilling: 1},
				{do: "first 1", holding: 1, prefilling: 1},
				{do: "release 1", holding: 1, prefilling: 1},
			},
		},
		{
			name: "Release without FirstToken frees both places",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "release 0", admits: []int{1}, holding: 1, prefilling: 1, waiting: 1},
				{do: "first 1", holding: 1, prefilling: 0, waiting: 1},
				{do: "release 1", admits: []int{2}, holding: 1, prefilling: 1},
			},
		},
		{
			name: "a released slot admits a waiter only if W has room",
			opts: limiter.Options{Slots: 2, WaitingLimit: 1, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "first 0", holding: 1, prefilling: 0},
				{do: "acquire", want: "direct", holding: 2, prefilling: 1},
				{do: "acquire", want: "queued", holding: 2, prefilling: 1, waiting: 1},
				// Room under N, none under W.
				{do: "release 0", holding: 1, prefilling: 1, waiting: 1},
				{do: "first 1", admits: []int{2}, holding: 2, prefilling: 1},
			},
		},
		{
			name: "a freed waiting place admits a waiter only if N has room",
			opts: limiter.Options{Slots: 1, WaitingLimit: 2, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				// Room under W, none under N.
				{do: "first 0", holding: 1, prefilling: 0, waiting: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 0, waiting: 1},
				{do: "release 0", admits: []int{1}, holding: 1, prefilling: 1},
			},
		},
		{
			name: "one freed place admits one waiter",
			opts: limiter.Options{Slots: 4, WaitingLimit: 1, QueueLen: 3},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 3},
				{do: "first 0", admits: []int{1}, holding: 2, prefilling: 1, waiting: 2},
				{do: "first 1", admits: []int{2}, holding: 3, prefilling: 1, waiting: 1},
				{do: "release 2", admits: []int{3}, holding: 3, prefilling: 1},
			},
		},
		{
			name: "W only, no N",
			opts: limiter.Options{WaitingLimit: 2, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "direct", holding: 2, prefilling: 2},
				{do: "acquire", want: "queued", holding: 2, prefilling: 2, waiting: 1},
				{do: "acquire", want: "full", holding: 2, prefilling: 2, waiting: 1},
				{do: "first 0", admits: []int{2}, holding: 3, prefilling: 2},
				{do: "first 1", holding: 3, prefilling: 1},
				{do: "first 2", holding: 3, prefilling: 0},
				// Any number may be admitted past their first token.
				{do: "acquire", want: "direct", holding: 4, prefilling: 1},
				{do: "acquire", want: "direct", holding: 5, prefilling: 2},
				{do: "acquire", want: "queued", holding: 5, prefilling: 2, waiting: 1},
				{do: "release 4", admits: []int{6}, holding: 5, prefilling: 2},
			},
		},
		{
			name: "Q=0 with W",
			opts: limiter.Options{Slots: 4, WaitingLimit: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1},
				{do: "first 0", holding: 1, prefilling: 0},
				{do: "acquire", want: "direct", holding: 2, prefilling: 1},
				{do: "acquire", want: "full", holding: 2, prefilling: 1},
				{do: "release 2", holding: 1, prefilling: 0},
				{do: "acquire", want: "direct", holding: 2, prefilling: 1},
			},
		},
		{
			name: "W equal to N",
			opts: limiter.Options{Slots: 2, WaitingLimit: 2, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "direct", holding: 2, prefilling: 2},
				{do: "acquire", want: "queued", holding: 2, prefilling: 2, waiting: 1},
				{do: "first 0", holding: 2, prefilling: 1, waiting: 1},
				{do: "first 1", holding: 2, prefilling: 0, waiting: 1},
				{do: "release 1", admits: []int{2}, holding: 2, prefilling: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runScript(t, tt.opts, tt.steps) })
	}
}

// TestSetLimits checks changes of N, W and Q at run time: raising a limit
// admits waiters at once, oldest first, as far as both limits allow;
// lowering one takes nothing back, and what is freed above it is not
// handed on; waiters beyond a lowered Q stay queued while newcomers are
// refused; a refused change changes nothing.
func TestSetLimits(t *testing.T) {
	lim := func(n, w, q int) limiter.Limits { return limiter.Limits{Slots: n, WaitingLimit: w, QueueLen: q} }
	tests := []struct {
		name  string
		opts  limiter.Options
		steps []step
	}{
		{
			name: "raising W admits waiters in order",
			opts: limiter.Options{Slots: 8, WaitingLimit: 1, QueueLen: 4},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 3},
				{do: "set", lim: lim(8, 3, 4), admits: []int{1, 2}, holding: 3, prefilling: 3, waiting: 1},
				{do: "set", lim: lim(8, 3, 4), holding: 3, prefilling: 3, waiting: 1},
				// Unsetting W leaves N alone in force.
				{do: "set", lim: lim(8, 0, 4), admits: []int{3}, holding: 4, prefilling: 4},
			},
		},
		{
			name: "raising N admits waiters in order",
			opts: limiter.Options{Slots: 1, WaitingLimit: 4, QueueLen: 4},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 3},
				{do: "set", lim: lim(3, 4, 4), admits: []int{1, 2}, holding: 3, prefilling: 3, waiting: 1},
				{do: "set", lim: lim(0, 4, 4), admits: []int{3}, holding: 4, prefilling: 4},
			},
		},
		{
			name: "raising both: the lesser room decides",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 4},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 3},
				{do: "set", lim: lim(3, 2, 4), admits: []int{1}, holding: 2, prefilling: 2, waiting: 2},
				{do: "first 0", admits: []int{2}, holding: 3, prefilling: 2, waiting: 1},
				{do: "first 1", holding: 3, prefilling: 1, waiting: 1},
				{do: "release 0", admits: []int{3}, holding: 3, prefilling: 2},
			},
		},
		{
			name: "lowering W takes nothing back",
			opts: limiter.Options{Slots: 4, WaitingLimit: 3, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "direct", holding: 2, prefilling: 2},
				{do: "acquire", want: "direct", holding: 3, prefilling: 3},
				{do: "set", lim: lim(4, 1, 2), holding: 3, prefilling: 3},
				{do: "acquire", want: "queued", holding: 3, prefilling: 3, waiting: 1},
				{do: "first 0", holding: 3, prefilling: 2, waiting: 1},
				{do: "release 1", holding: 2, prefilling: 1, waiting: 1},
				{do: "first 2", admits: []int{3}, holding: 3, prefilling: 1},
			},
		},
		{
			name: "lowering N takes nothing back",
			opts: limiter.Options{Slots: 3, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "direct", holding: 2, prefilling: 2},
				{do: "acquire", want: "direct", holding: 3, prefilling: 3},
				{do: "set", lim: lim(1, 0, 2), holding: 3, prefilling: 3},
				{do: "acquire", want: "queued", holding: 3, prefilling: 3, waiting: 1},
				{do: "release 0", holding: 2, prefilling: 2, waiting: 1},
				{do: "release 1", holding: 1, prefilling: 1, waiting: 1},
				{do: "release 2", admits: []int{3}, holding: 1, prefilling: 1},
			},
		},
		{
			name: "lowering Q keeps the waiters and refuses newcomers until below",
			opts: limiter.Options{Slots: 1, QueueLen: 3},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 3},
				{do: "set", lim: lim(1, 0, 1), holding: 1, prefilling: 1, waiting: 3},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 3},
				{do: "release 0", admits: []int{1}, holding: 1, prefilling: 1, waiting: 2},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 2},
				{do: "release 1", admits: []int{2}, holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 1},
				{do: "release 2", admits: []int{3}, holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 1},
				{do: "release 3", admits: []int{7}, holding: 1, prefilling: 1},
			},
		},
		{
			name: "Q to 0 and back",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "set", lim: lim(1, 1, 0), holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 1},
				{do: "release 0", admits: []int{1}, holding: 1, prefilling: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1},
				{do: "set", lim: lim(1, 1, 2), holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
			},
		},
		{
			name: "from W only to N only",
			opts: limiter.Options{WaitingLimit: 1, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "set", lim: lim(2, 0, 2), admits: []int{1}, holding: 2, prefilling: 2},
				{do: "acquire", want: "queued", holding: 2, prefilling: 2, waiting: 1},
				{do: "first 0", holding: 2, prefilling: 1, waiting: 1},
				{do: "release 0", admits: []int{2}, holding: 2, prefilling: 2},
			},
		},
		{
			name: "SetSlots keeps W and Q",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 2},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "slots", lim: lim(3, 0, 0), holding: 1, prefilling: 1, waiting: 1},
				{do: "first 0", admits: []int{1}, holding: 2, prefilling: 1},
				{do: "slots", lim: lim(0, 0, 0), want: "slots must be at least 1, got 0", holding: 2, prefilling: 1},
			},
		},
		{
			name: "a refused change changes nothing",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 1},
			steps: []step{
				{do: "acquire", want: "direct", holding: 1, prefilling: 1},
				{do: "acquire", want: "queued", holding: 1, prefilling: 1, waiting: 1},
				{do: "set", lim: lim(5, -1, 5), want: "waiting limit must not be negative, got -1", holding: 1, prefilling: 1, waiting: 1},
				{do: "set", lim: lim(0, 0, 5), want: "slots must be at least 1, got 0", holding: 1, prefilling: 1, waiting: 1},
				{do: "acquire", want: "full", holding: 1, prefilling: 1, waiting: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runScript(t, tt.opts, tt.steps) })
	}
}

// TestSetLimitsInvalid checks that invalid limits are refused, naming
// each bad field, and change nothing.
func TestSetLimitsInvalid(t *testing.T) {
	tests := []struct {
		name string
		lim  limiter.Limits
		want []string
	}{
		{name: "no engine limit", lim: limiter.Limits{QueueLen: 3}, want: []string{"slots must be at least 1, got 0"}},
		{name: "all zero", lim: limiter.Limits{}, want: []string{"slots must be at least 1, got 0"}},
		{name: "negative slots", lim: limiter.Limits{Slots: -1, WaitingLimit: 2}, want: []string{"slots must be at least 1, got -1"}},
		{name: "negative waiting limit", lim: limiter.Limits{Slots: 2, WaitingLimit: -1}, want: []string{"waiting limit must not be negative, got -1"}},
		{name: "negative waiting limit alone", lim: limiter.Limits{WaitingLimit: -3}, want: []string{"waiting limit must not be negative, got -3"}},
		{name: "negative queue", lim: limiter.Limits{Slots: 2, QueueLen: -1}, want: []string{"queue length must not be negative, got -1"}},
		{name: "min int", lim: limiter.Limits{Slots: math.MinInt, WaitingLimit: 1}, want: []string{fmt.Sprintf("slots must be at least 1, got %d", math.MinInt)}},
		{name: "negative prefill token limit", lim: limiter.Limits{Slots: 2, PrefillTokenLimit: -5}, want: []string{"prefill token limit must not be negative, got -5"}},
		{name: "negative queue token limit", lim: limiter.Limits{Slots: 2, QueueTokenLimit: -7}, want: []string{"queue token limit must not be negative, got -7"}},
		{name: "max prefill token limit", lim: limiter.Limits{Slots: 2, PrefillTokenLimit: math.MaxInt64}, want: []string{"prefill token limit must be below"}},
		{name: "max queue token limit", lim: limiter.Limits{Slots: 2, QueueTokenLimit: math.MaxInt64}, want: []string{"queue token limit must be below"}},
		{
			name: "everything wrong", lim: limiter.Limits{Slots: -1, WaitingLimit: -2, QueueLen: -3, PrefillTokenLimit: -4, QueueTokenLimit: -5},
			want: []string{"slots must be at least 1, got -1", "waiting limit must not be negative, got -2", "queue length must not be negative, got -3",
				"prefill token limit must not be negative, got -4", "queue token limit must not be negative, got -5"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := limiter.Options{Slots: 2, WaitingLimit: 1, QueueLen: 1}
			l := newLimiter(t, opts)
			p, err := l.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			before, limBefore := l.Stats(), l.Limits()
			err = l.SetLimits(tt.lim)
			if err == nil {
				t.Fatalf("SetLimits(%+v) = nil, want an error", tt.lim)
			}
			if !strings.HasPrefix(err.Error(), "limiter: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("SetLimits(%+v) = %q, want it to contain %q", tt.lim, err, w)
				}
			}
			if got := l.Limits(); got != limBefore {
				t.Errorf("Limits() = %+v after a refused change, want %+v", got, limBefore)
			}
			checkStats(t, l, before)
			// Still W = 1: a second request would wait.
			if release, queued, err := probe(t, l); err == nil || !queued {
				if release != nil {
					release()
				}
				t.Errorf("second request: queued %t, err %v; want it queued under W = 1", queued, err)
			}
			p.Release()
		})
	}
}

// TestLimitsUnlimited checks that an unlimited limiter has no limits to
// report or change, and stays a pass-through.
func TestLimitsUnlimited(t *testing.T) {
	l := limiter.NewUnlimited()
	p, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []limiter.Limits{{Slots: 4}, {Slots: 4, WaitingLimit: 2, QueueLen: 8}, {WaitingLimit: 1}, {}} {
		if err := l.SetLimits(lim); err == nil {
			t.Errorf("SetLimits(%+v) on an unlimited limiter = nil, want an error", lim)
		}
	}
	if got := l.Limits(); got != (limiter.Limits{}) {
		t.Errorf("Limits() = %+v, want all zero", got)
	}
	p.FirstToken()
	checkStats(t, l, limiter.Stats{Unlimited: true, Holding: 1, Prefilling: -1, AdmittedDirect: 1})
	for range 3 {
		q, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer q.Release()
	}
	checkStats(t, l, limiter.Stats{Unlimited: true, Holding: 4, Prefilling: 3, AdmittedDirect: 4})
	p.Release()
}

// TestNoBargingTwoLimits checks that when room appears under both limits
// (by a first token, a release or a raised limit), it goes to the waiter,
// not to a newcomer that arrives in the same instant; and that room under
// one limit alone lets no newcomer past a waiter.
func TestNoBargingTwoLimits(t *testing.T) {
	tests := []struct {
		name string
		opts limiter.Options
		// free makes room for the waiter; nil for none (room under one
		// limit only).
		free func(l *limiter.Limiter, p *limiter.Permit) error
	}{
		{
			name: "waiting place freed by FirstToken",
			opts: limiter.Options{Slots: 4, WaitingLimit: 1, QueueLen: 2},
			free: func(_ *limiter.Limiter, p *limiter.Permit) error { p.FirstToken(); return nil },
		},
		{
			name: "slot freed by Release",
			opts: limiter.Options{Slots: 1, WaitingLimit: 4, QueueLen: 2},
			free: func(_ *limiter.Limiter, p *limiter.Permit) error { p.Release(); return nil },
		},
		{
			name: "both freed by Release",
			opts: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 2},
			free: func(_ *limiter.Limiter, p *limiter.Permit) error { p.Release(); return nil },
		},
		{
			name: "W raised",
			opts: limiter.Options{Slots: 4, WaitingLimit: 1, QueueLen: 2},
			free: func(l *limiter.Limiter, _ *limiter.Permit) error {
				return l.SetLimits(limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 2})
			},
		},
		{
			name: "N raised",
			opts: limiter.Options{Slots: 1, QueueLen: 2},
			free: func(l *limiter.Limiter, _ *limiter.Permit) error { return l.SetSlots(2) },
		},
		{
			name: "room under N only",
			opts: limiter.Options{Slots: 4, WaitingLimit: 1, QueueLen: 2},
		},
		{
			name: "room under W only",
			opts: limiter.Options{Slots: 1, WaitingLimit: 4, QueueLen: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, tt.opts)
				p, err := l.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				w := startRequest(l, limiter.Request{})
				defer w.cancel()
				synctest.Wait()
				if _, ok := w.returned(); ok || w.onQueued.Load() != 1 {
					t.Fatal("the waiter was not queued")
				}
				if tt.free != nil {
					if err := tt.free(l, p); err != nil {
						t.Fatal(err)
					}
				}
				// The newcomer arrives at once, before the waiter has run.
				release, queued, err := probe(t, l)
				if err == nil {
					release()
					t.Fatal("newcomer admitted directly while a waiter was queued: barging")
				}
				if !queued || !errors.Is(err, context.Canceled) {
					t.Fatalf("newcomer: queued %t, err %v; want it queued behind the waiter", queued, err)
				}
				synctest.Wait()
				a, ok := w.returned()
				if (tt.free != nil) != (ok && a.err == nil) {
					t.Fatalf("waiter: returned %t (%v); want it admitted %t", ok, a.err, tt.free != nil)
				}
				if err := l.CheckInvariants(); err != nil {
					t.Fatal(err)
				}
				w.cancel()
				synctest.Wait()
				if a, ok := w.returned(); ok && a.p != nil {
					a.p.Release()
				}
				p.Release()
				if s := l.Stats(); s.Holding != 0 || s.Prefilling != 0 || s.Waiting != 0 {
					t.Fatalf("at the end: %+v", s)
				}
			})
		})
	}
}

// TestRoom checks Room: the requests the limiter would admit at once,
// under both limits, less those waiting.
func TestRoom(t *testing.T) {
	tests := []struct {
		name    string
		opts    limiter.Options
		held    int // direct admissions
		first   int // of which have had their first token
		waiters int
		lower   *limiter.Limits // set after the above
		want    int
	}{
		{name: "N only, empty", opts: limiter.Options{Slots: 4}, want: 4},
		{name: "N only, one held", opts: limiter.Options{Slots: 4, QueueLen: 2}, held: 1, want: 3},
		{name: "N only, full", opts: limiter.Options{Slots: 2, QueueLen: 2}, held: 2, want: 0},
		{name: "N only, waiters", opts: limiter.Options{Slots: 2, QueueLen: 2}, held: 2, waiters: 2, want: -2},
		{name: "W smaller", opts: limiter.Options{Slots: 8, WaitingLimit: 2}, held: 1, want: 1},
		{name: "W full, N not", opts: limiter.Options{Slots: 8, WaitingLimit: 2, QueueLen: 2}, held: 2, want: 0},
		{name: "W freed by first tokens", opts: limiter.Options{Slots: 8, WaitingLimit: 2}, held: 3, first: 2, want: 1},
		{name: "N smaller", opts: limiter.Options{Slots: 4, WaitingLimit: 4}, held: 3, first: 3, want: 1},
		{name: "W full, waiters", opts: limiter.Options{Slots: 8, WaitingLimit: 1, QueueLen: 3}, held: 1, waiters: 3, want: -3},
		{name: "W only", opts: limiter.Options{WaitingLimit: 3}, held: 5, first: 4, want: 2},
		{
			name: "limits lowered below the holders", opts: limiter.Options{Slots: 4, WaitingLimit: 4, QueueLen: 1}, held: 4,
			lower: &limiter.Limits{Slots: 2, WaitingLimit: 1, QueueLen: 1}, want: 0,
		},
		{
			name: "lowered, with a waiter", opts: limiter.Options{Slots: 4, QueueLen: 1}, held: 4, waiters: 1,
			lower: &limiter.Limits{Slots: 2, QueueLen: 1}, want: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, tt.opts)
				var permits []*limiter.Permit
				for i := range tt.held {
					p, err := l.Acquire(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if i < tt.first {
						p.FirstToken()
					}
					permits = append(permits, p)
				}
				var ws []*request
				for range tt.waiters {
					w := startRequest(l, limiter.Request{})
					defer w.cancel()
					ws = append(ws, w)
					synctest.Wait()
				}
				if tt.lower != nil {
					if err := l.SetLimits(*tt.lower); err != nil {
						t.Fatal(err)
					}
				}
				if got := l.Room(); got != tt.want {
					t.Errorf("Room() = %d, want %d (%+v)", got, tt.want, l.Stats())
				}
				for _, w := range ws {
					w.cancel()
				}
				synctest.Wait()
				for _, p := range permits {
					p.Release()
				}
			})
		})
	}
	t.Run("unlimited", func(t *testing.T) {
		l := limiter.NewUnlimited()
		p, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		if got := l.Room(); got < math.MaxInt/2 {
			t.Errorf("Room() = %d on an unlimited limiter, want it unbounded", got)
		}
	})
}
