package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/limiter"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ---------------------------------------------------------------------------
// Helpers shared by the black-box tests.

func newLimiter(t testing.TB, opts limiter.Options) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	return l
}

// acquireDirect takes a slot that must be granted without queuing.
func acquireDirect(t testing.TB, l *limiter.Limiter) func() {
	t.Helper()
	queued := false
	release, err := l.AcquireRequest(context.Background(), limiter.Request{OnQueued: func() { queued = true }})
	if err != nil {
		t.Fatalf("Acquire: %v, want a direct admission", err)
	}
	if queued {
		t.Fatal("Acquire queued, want a direct admission")
	}
	return release.Release
}

// probe asks for a slot without ever waiting: its OnQueued cancels its own
// context, so a queued probe leaves at once with context.Canceled (counted
// as CancelledWaiting). It reports whether the probe was admitted directly
// (then the caller owns release), queued, or refused.
func probe(t testing.TB, l *limiter.Limiter) (release func(), queued bool, err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() {
		queued = true
		cancel()
	}})
	if queued && err == nil {
		t.Fatal("probe: queued and then granted although its context was cancelled before waiting")
	}
	if p != nil {
		release = p.Release
	}
	return release, queued, err
}

// outcome is what one Acquire call returned, and when (fake time inside a
// synctest bubble).
type outcome struct {
	err error
	at  time.Time
}

// client runs one AcquireRequest in its own goroutine. On success it holds
// the slot until letGo is called, then releases it.
type client struct {
	done     chan outcome
	hold     chan struct{}
	onQueued atomic.Int32
	out      *outcome
}

func startClient(l *limiter.Limiter, ctx context.Context, req limiter.Request) *client {
	return startClientReleasing(l, ctx, req, 1)
}

// startClientReleasing is startClient with a client that calls its release
// function the given number of times.
func startClientReleasing(l *limiter.Limiter, ctx context.Context, req limiter.Request, releases int) *client {
	c := &client{done: make(chan outcome, 1), hold: make(chan struct{})}
	inner := req.OnQueued
	req.OnQueued = func() {
		c.onQueued.Add(1)
		if inner != nil {
			inner()
		}
	}
	go func() {
		release, err := l.AcquireRequest(ctx, req)
		c.done <- outcome{err: err, at: time.Now()}
		if err == nil {
			<-c.hold
			for range releases {
				release.Release()
			}
		}
	}()
	return c
}

// returned reports the client's outcome if Acquire has returned.
func (c *client) returned() (outcome, bool) {
	if c.out != nil {
		return *c.out, true
	}
	select {
	case o := <-c.done:
		c.out = &o
		return o, true
	default:
		return outcome{}, false
	}
}

// letGo makes a client that holds a slot release it.
func (c *client) letGo() { close(c.hold) }

// startQueued starts a client inside a synctest bubble and waits until it
// is blocked, checking that it entered the queue.
// acquireN takes n slots directly and returns their release functions.
func acquireN(t testing.TB, l *limiter.Limiter, n int) []func() {
	t.Helper()
	releases := make([]func(), n)
	for i := range releases {
		releases[i] = acquireDirect(t, l)
	}
	return releases
}

// queueN starts n plain requests, each queued in turn behind the last.
func queueN(t *testing.T, l *limiter.Limiter, n int) []*client {
	t.Helper()
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = startQueued(t, l, context.Background(), limiter.Request{})
	}
	return clients
}

func startQueued(t *testing.T, l *limiter.Limiter, ctx context.Context, req limiter.Request) *client {
	t.Helper()
	return startQueuedReleasing(t, l, ctx, req, 1)
}

func startQueuedReleasing(t *testing.T, l *limiter.Limiter, ctx context.Context, req limiter.Request, releases int) *client {
	t.Helper()
	before := l.Stats().Waiting
	c := startClientReleasing(l, ctx, req, releases)
	synctest.Wait()
	if o, ok := c.returned(); ok {
		t.Fatalf("client returned %v, want it queued", o.err)
	}
	if got := c.onQueued.Load(); got != 1 {
		t.Fatalf("OnQueued called %d times, want 1", got)
	}
	if got := l.Stats().Waiting; got != before+1 {
		t.Fatalf("Waiting = %d after queuing, want %d", got, before+1)
	}
	return c
}

// granted returns the indexes of clients that returned with a slot and have
// not been let go yet. Clients that returned an error are left out.
func granted(t *testing.T, cs []*client) []int {
	t.Helper()
	var idx []int
	for i, c := range cs {
		o, ok := c.returned()
		if !ok || o.err != nil {
			continue
		}
		select {
		case <-c.hold:
		default:
			idx = append(idx, i)
		}
	}
	return idx
}

// checkStats compares l.Stats() with want. A want without Classes, for a
// limiter with a queue, stands for one unnamed class that mirrors the
// totals, as a limiter without configured classes reports it.
func checkStats(t *testing.T, l *limiter.Limiter, want limiter.Stats) {
	t.Helper()
	if want.Classes == nil && !want.Unlimited {
		want.Classes = []limiter.ClassStats{{
			Waiting: want.Waiting, QueuedTokens: want.QueuedTokens, AdmittedQueued: want.AdmittedQueued,
			RejectedFull: want.RejectedFull, RejectedTokens: want.RejectedTokens,
			TimedOut: want.TimedOut, CancelledWaiting: want.CancelledWaiting,
		}}
	}
	if want.Prefilling < 0 {
		want.Prefilling = 0 // asked for explicitly
	} else if want.Prefilling == 0 {
		// Most tests hold slots without ever reporting a first token: each
		// holder still holds its waiting place too.
		want.Prefilling = want.Holding
	}
	if got := l.Stats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Stats =\n\t%+v\nwant\n\t%+v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// ---------------------------------------------------------------------------

func TestNew(t *testing.T) {
	problems := map[string]string{
		"slots":   "slots must be at least 1",
		"waiting": "waiting limit must not be negative",
		"queue":   "queue length must not be negative",
		"timeout": "queue timeout must not be negative",
	}
	tests := []struct {
		name      string
		opts      limiter.Options
		wantErr   []string // keys of problems, and exact fragments
		wantStats limiter.Stats
	}{
		{name: "minimal", opts: limiter.Options{Slots: 1}, wantStats: limiter.Stats{Slots: 1}},
		{
			name:      "all set",
			opts:      limiter.Options{Slots: 3, QueueLen: 2, QueueTimeout: time.Second},
			wantStats: limiter.Stats{Slots: 3, QueueLen: 2, QueueTimeout: time.Second},
		},
		{name: "waiting limit only", opts: limiter.Options{WaitingLimit: 2}, wantStats: limiter.Stats{WaitingLimit: 2}},
		{
			name:      "both limits",
			opts:      limiter.Options{Slots: 8, WaitingLimit: 2, QueueLen: 4, QueueTimeout: time.Second, AdaptiveLIFO: true},
			wantStats: limiter.Stats{Slots: 8, WaitingLimit: 2, QueueLen: 4, QueueTimeout: time.Second},
		},
		{
			name:      "waiting limit and queue",
			opts:      limiter.Options{WaitingLimit: 1, QueueLen: 3},
			wantStats: limiter.Stats{WaitingLimit: 1, QueueLen: 3},
		},
		{name: "zero value", opts: limiter.Options{}, wantErr: []string{"slots", "got 0"}},
		{name: "zero slots", opts: limiter.Options{Slots: 0, QueueLen: 4}, wantErr: []string{"slots", "got 0"}},
		{name: "negative slots", opts: limiter.Options{Slots: -1}, wantErr: []string{"slots", "got -1"}},
		{name: "queue and timeout only", opts: limiter.Options{QueueLen: 2, QueueTimeout: time.Second}, wantErr: []string{"slots", "got 0"}},
		{name: "negative waiting limit", opts: limiter.Options{Slots: 1, WaitingLimit: -1}, wantErr: []string{"waiting", "got -1"}},
		{name: "negative waiting limit alone", opts: limiter.Options{WaitingLimit: -2}, wantErr: []string{"waiting", "got -2"}},
		{name: "negative queue", opts: limiter.Options{Slots: 1, QueueLen: -1}, wantErr: []string{"queue", "got -1"}},
		{name: "negative timeout", opts: limiter.Options{Slots: 1, QueueTimeout: -time.Nanosecond}, wantErr: []string{"timeout", "got -1ns"}},
		{
			name:    "everything wrong",
			opts:    limiter.Options{Slots: -2, WaitingLimit: -4, QueueLen: -3, QueueTimeout: -time.Second},
			wantErr: []string{"slots", "waiting", "queue", "timeout", "got -2", "got -4", "got -3", "got -1s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(tt.opts)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				checkStats(t, l, tt.wantStats)
				return
			}
			if err == nil {
				t.Fatalf("New(%+v) = nil error, want one", tt.opts)
			}
			if l != nil {
				t.Errorf("New returned a limiter with error %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "limiter: ") {
				t.Errorf("error %q lacks the package prefix", msg)
			}
			want := map[string]bool{}
			for _, w := range tt.wantErr {
				if p, ok := problems[w]; ok {
					want[w] = true
					w = p
				}
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for key, p := range problems {
				if !want[key] && strings.Contains(msg, p) {
					t.Errorf("error %q names a problem it does not have: %q", msg, p)
				}
			}
		})
	}
}

func TestAcquireDirect(t *testing.T) {
	tests := []struct {
		name     string
		slots    int
		queueLen int
		acquire  int
	}{
		{name: "one slot", slots: 1, acquire: 1},
		{name: "some of many", slots: 8, queueLen: 2, acquire: 5},
		{name: "all of many", slots: 64, queueLen: 1, acquire: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.queueLen})
			releases := acquireN(t, l, tt.acquire)
			want := limiter.Stats{Slots: tt.slots, QueueLen: tt.queueLen, Holding: tt.acquire, AdmittedDirect: uint64(tt.acquire)}
			checkStats(t, l, want)
			for _, r := range releases {
				r()
			}
			want.Holding = 0
			checkStats(t, l, want)
		})
	}
}

// TestQueueThenFull checks the exact cap: N direct, Q queued, and the
// request after those is refused at once with ErrQueueFull.
func TestQueueThenFull(t *testing.T) {
	tests := []struct {
		name     string
		slots    int
		queueLen int
	}{
		{name: "N=3 Q=2", slots: 3, queueLen: 2},
		{name: "N=1 Q=0", slots: 1, queueLen: 0},
		{name: "N=1 Q=1", slots: 1, queueLen: 1},
		{name: "N=2 Q=5", slots: 2, queueLen: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.queueLen})
				holders := acquireN(t, l, tt.slots)
				waiters := queueN(t, l, tt.queueLen)
				want := limiter.Stats{
					Slots: tt.slots, QueueLen: tt.queueLen,
					Holding: tt.slots, Waiting: tt.queueLen,
					AdmittedDirect: uint64(tt.slots),
				}
				checkStats(t, l, want)

				// Request N+Q+1, twice. Acquire runs in this goroutine: if
				// it blocked, the bubble would deadlock and the test fail.
				for i := range 2 {
					onQueued := 0
					release, err := l.AcquireRequest(context.Background(), limiter.Request{OnQueued: func() { onQueued++ }})
					if !errors.Is(err, limiter.ErrQueueFull) {
						t.Fatalf("request %d: err = %v, want ErrQueueFull", tt.slots+tt.queueLen+1, err)
					}
					if release != nil {
						t.Fatal("release is not nil on ErrQueueFull")
					}
					if onQueued != 0 {
						t.Fatalf("OnQueued called %d times on a refused request", onQueued)
					}
					want.RejectedFull = uint64(i + 1)
					checkStats(t, l, want)
				}

				// Drain: every release passes the slot to a waiter.
				for _, r := range holders {
					r()
				}
				for pending := len(waiters); pending > 0; {
					synctest.Wait()
					g := granted(t, waiters)
					if len(g) == 0 {
						t.Fatalf("%d waiters left but none was granted a slot", pending)
					}
					for _, i := range g {
						waiters[i].letGo()
						pending--
					}
				}
				synctest.Wait()
				want.Holding, want.Waiting = 0, 0
				want.AdmittedQueued = uint64(tt.queueLen)
				checkStats(t, l, want)
			})
		})
	}
}

// TestFIFO checks that each released slot goes to the oldest waiter.
func TestFIFO(t *testing.T) {
	tests := []struct {
		name    string
		slots   int
		waiters int
	}{
		{name: "one slot", slots: 1, waiters: 5},
		{name: "two slots", slots: 2, waiters: 6},
		{name: "as many waiters as slots", slots: 3, waiters: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.waiters})
				holders := acquireN(t, l, tt.slots)
				ws := queueN(t, l, tt.waiters)
				// Release holders, then granted waiters, one at a time, in
				// the order they got their slot. Each release must grant
				// exactly the next waiter in arrival order.
				var order []int // grant order
				holding := []int{}
				releaseNext := func() {
					if len(holders) > 0 {
						holders[0]()
						holders = holders[1:]
						return
					}
					ws[holding[0]].letGo()
					holding = holding[1:]
				}
				for len(order) < tt.waiters {
					releaseNext()
					synctest.Wait()
					g := granted(t, ws)
					var fresh []int
					for _, i := range g {
						if !containsInt(holding, i) {
							fresh = append(fresh, i)
						}
					}
					if len(fresh) != 1 {
						t.Fatalf("one release granted waiters %v, want exactly one", fresh)
					}
					if want := len(order); fresh[0] != want {
						t.Fatalf("release granted waiter %d, want the oldest, %d (grants so far %v)", fresh[0], want, order)
					}
					order = append(order, fresh[0])
					holding = append(holding, fresh[0])
				}
				for _, r := range holders {
					r()
				}
				for _, i := range holding {
					ws[i].letGo()
				}
				synctest.Wait()
				checkStats(t, l, limiter.Stats{
					Slots: tt.slots, QueueLen: tt.waiters,
					AdmittedDirect: uint64(tt.slots), AdmittedQueued: uint64(tt.waiters),
				})
			})
		})
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestNoBarging checks that a newcomer never takes a slot while somebody
// waits, even when a slot is released just before it arrives: that slot
// already belongs to the waiter.
func TestNoBarging(t *testing.T) {
	tests := []struct {
		name           string
		slots          int
		releaseFirst   bool // release one holder just before the newcomer
		wantHoldingEnd int  // after the waiter got its slot
	}{
		{name: "slot released just before the newcomer", slots: 2, releaseFirst: true, wantHoldingEnd: 2},
		{name: "single slot released just before the newcomer", slots: 1, releaseFirst: true, wantHoldingEnd: 1},
		{name: "no slot released", slots: 1, releaseFirst: false, wantHoldingEnd: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: 2})
				holders := acquireN(t, l, tt.slots)
				w := startQueued(t, l, context.Background(), limiter.Request{})
				if tt.releaseFirst {
					holders[0]()
					holders = holders[1:]
				}
				// The newcomer arrives at once, before the waiter has run.
				release, queued, err := probe(t, l)
				if err == nil {
					release()
					t.Fatal("newcomer was admitted directly while a waiter was queued: barging")
				}
				if !queued || !errors.Is(err, context.Canceled) {
					t.Fatalf("newcomer: queued = %t, err = %v; want queued behind the waiter", queued, err)
				}
				synctest.Wait()
				if tt.releaseFirst {
					if g := granted(t, []*client{w}); len(g) != 1 {
						t.Fatal("the released slot did not reach the waiter")
					}
				} else {
					holders[0]()
					holders = holders[1:]
					synctest.Wait()
					if g := granted(t, []*client{w}); len(g) != 1 {
						t.Fatal("the released slot did not reach the waiter")
					}
				}
				checkStats(t, l, limiter.Stats{
					Slots: tt.slots, QueueLen: 2, Holding: tt.wantHoldingEnd,
					AdmittedDirect: uint64(tt.slots), AdmittedQueued: 1, CancelledWaiting: 1,
				})
				for _, r := range holders {
					r()
				}
				w.letGo()
				synctest.Wait()
				if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Fatalf("after all releases: Holding %d Waiting %d", s.Holding, s.Waiting)
				}
			})
		})
	}
}

// TestReleaseTwice checks that a second call of a release function does
// nothing: it neither frees a slot somebody else now holds nor hands an
// extra slot to a waiter.
func TestReleaseTwice(t *testing.T) {
	tests := []struct {
		name     string
		slots    int
		queueLen int
	}{
		{name: "one slot no queue", slots: 1},
		{name: "two slots no queue", slots: 2},
		{name: "one slot two waiters", slots: 1, queueLen: 2},
		{name: "three slots three waiters", slots: 3, queueLen: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.queueLen})
				holders := acquireN(t, l, tt.slots)
				var ws []*client // these release twice as well
				for range tt.queueLen {
					ws = append(ws, startQueuedReleasing(t, l, context.Background(), limiter.Request{}, 2))
				}
				// Release every request twice, one at a time in grant order:
				// each double release passes on exactly one slot.
				total := tt.slots + tt.queueLen
				for i := range total {
					if i < tt.slots {
						holders[i]()
						holders[i]()
					} else {
						ws[i-tt.slots].letGo()
					}
					synctest.Wait()
					left := total - (i + 1) // requests not yet released
					wantGranted := min(i+1, tt.queueLen)
					wantHolding := min(left, tt.slots)
					g := granted(t, ws)
					if want := seq(max(0, i+1-tt.slots), wantGranted); !equalInts(g, want) {
						t.Fatalf("after double release %d: waiters holding %v, want %v", i, g, want)
					}
					if s := l.Stats(); s.Holding != wantHolding || s.Waiting != left-wantHolding {
						t.Fatalf("after double release %d: Holding %d Waiting %d, want %d %d", i, s.Holding, s.Waiting, wantHolding, left-wantHolding)
					}
				}
				checkStats(t, l, limiter.Stats{
					Slots: tt.slots, QueueLen: tt.queueLen,
					AdmittedDirect: uint64(tt.slots), AdmittedQueued: uint64(tt.queueLen),
				})
				// Calling every holder's release yet again changes nothing:
				// N slots can be taken, and the next request queues or is
				// refused (Holding was not driven below zero).
				for _, r := range holders {
					r()
				}
				again := acquireN(t, l, tt.slots)
				release, _, err := probe(t, l)
				if err == nil {
					release()
					t.Fatalf("request %d admitted with %d slots after stale releases", tt.slots+1, tt.slots)
				}
				for _, r := range again {
					r()
					r()
				}
				if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Fatalf("Holding %d Waiting %d at the end, want 0 0", s.Holding, s.Waiting)
				}
			})
		})
	}
}

// TestAcquireEndedContext checks that a context that has already ended is
// refused before anything else, whatever the limiter's state, and that
// nothing is counted.
func TestAcquireEndedContext(t *testing.T) {
	cancelled := func(*testing.T) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	expired := func(t *testing.T) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		t.Cleanup(cancel)
		return ctx
	}
	withCause := func(*testing.T) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New("client went away"))
		return ctx
	}
	tests := []struct {
		name     string
		ctx      func(*testing.T) context.Context
		queueLen int
		held     int // slots taken before the call (of 1)
		wantErr  error
	}{
		{name: "cancelled, free slot", ctx: cancelled, queueLen: 1, wantErr: context.Canceled},
		{name: "deadline exceeded, free slot", ctx: expired, queueLen: 1, wantErr: context.DeadlineExceeded},
		{name: "cancelled with cause, free slot", ctx: withCause, wantErr: context.Canceled},
		{name: "cancelled, would queue", ctx: cancelled, queueLen: 1, held: 1, wantErr: context.Canceled},
		{name: "cancelled, would be refused", ctx: cancelled, queueLen: 0, held: 1, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: tt.queueLen})
			holders := acquireN(t, l, tt.held)
			before := l.Stats()
			ctx := tt.ctx(t)
			onQueued := 0
			release, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { onQueued++ }})
			if err != ctx.Err() || !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want ctx.Err() = %v", err, ctx.Err())
			}
			if release != nil {
				t.Fatal("release is not nil with an error")
			}
			if onQueued != 0 {
				t.Fatalf("OnQueued called %d times", onQueued)
			}
			checkStats(t, l, before)
			for _, r := range holders {
				r()
			}
		})
	}
}

// TestQueuedWaiterCancelled checks that a waiter whose context ends leaves
// the queue at once, is counted, keeps the others in order and frees its
// place for a newcomer.
func TestQueuedWaiterCancelled(t *testing.T) {
	tests := []struct {
		name    string
		waiters int
		cancel  int // index of the waiter whose context is cancelled
	}{
		{name: "only waiter", waiters: 1, cancel: 0},
		{name: "head of queue", waiters: 3, cancel: 0},
		{name: "middle of queue", waiters: 3, cancel: 1},
		{name: "tail of queue", waiters: 3, cancel: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: tt.waiters})
				holder := acquireDirect(t, l)
				var ws []*client
				var cancels []context.CancelFunc
				for range tt.waiters {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					cancels = append(cancels, cancel)
					ws = append(ws, startQueued(t, l, ctx, limiter.Request{}))
				}
				if _, _, err := probe(t, l); !errors.Is(err, limiter.ErrQueueFull) {
					t.Fatalf("probe with a full queue: %v, want ErrQueueFull", err)
				}
				start := time.Now()
				cancels[tt.cancel]()
				synctest.Wait()
				o, ok := ws[tt.cancel].returned()
				if !ok {
					t.Fatal("cancelled waiter is still blocked")
				}
				if !errors.Is(o.err, context.Canceled) {
					t.Fatalf("cancelled waiter: err = %v, want context.Canceled", o.err)
				}
				if d := o.at.Sub(start); d != 0 {
					t.Fatalf("cancelled waiter left after %v, want at once", d)
				}
				for i, w := range ws {
					if _, ok := w.returned(); ok && i != tt.cancel {
						t.Fatalf("waiter %d returned when waiter %d was cancelled", i, tt.cancel)
					}
				}
				want := limiter.Stats{
					Slots: 1, QueueLen: tt.waiters, Holding: 1, Waiting: tt.waiters - 1,
					AdmittedDirect: 1, RejectedFull: 1, CancelledWaiting: 1,
				}
				checkStats(t, l, want)

				// Its place is reusable.
				newcomer := startQueued(t, l, context.Background(), limiter.Request{})
				ws = append(ws, newcomer)

				// The others are served in order, the newcomer last.
				wantOrder := append(seq(0, tt.cancel), seq(tt.cancel+1, tt.waiters+1)...)
				holder()
				for _, wantNext := range wantOrder {
					synctest.Wait()
					if g := granted(t, ws); !equalInts(g, []int{wantNext}) {
						t.Fatalf("granted %v, want [%d]", g, wantNext)
					}
					ws[wantNext].letGo()
				}
				synctest.Wait()
				want.Holding, want.Waiting = 0, 0
				want.AdmittedQueued = uint64(tt.waiters)
				checkStats(t, l, want)
			})
		})
	}
}

// TestQueueTimeout checks, with a fake clock, that a waiter leaves with
// ErrQueueTimeout exactly at the earlier of Options.QueueTimeout and
// Request.Deadline, and not a nanosecond before.
func TestQueueTimeout(t *testing.T) {
	const never = time.Duration(-1)
	tests := []struct {
		name         string
		queueTimeout time.Duration
		deadline     time.Duration // Request.Deadline, from the start
		noDeadline   bool
		want         time.Duration // never: waits until granted
	}{
		{name: "queue timeout", queueTimeout: time.Second, noDeadline: true, want: time.Second},
		{name: "earlier request deadline wins", queueTimeout: time.Second, deadline: 300 * time.Millisecond, want: 300 * time.Millisecond},
		{name: "earlier queue timeout wins", queueTimeout: time.Second, deadline: 5 * time.Second, want: time.Second},
		{name: "request deadline only", deadline: 2 * time.Second, want: 2 * time.Second},
		{name: "deadline already passed", queueTimeout: time.Second, deadline: -time.Second, want: 0},
		{name: "no bound", noDeadline: true, want: never},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: tt.queueTimeout})
				holder := acquireDirect(t, l)
				start := time.Now()
				var req limiter.Request
				if !tt.noDeadline {
					req.Deadline = start.Add(tt.deadline)
				}
				w := startClient(l, context.Background(), req)
				want := limiter.Stats{Slots: 1, QueueLen: 1, QueueTimeout: tt.queueTimeout, Holding: 1, AdmittedDirect: 1}

				if tt.want == never {
					time.Sleep(24 * time.Hour) // advances the fake clock
					synctest.Wait()
					if o, ok := w.returned(); ok {
						t.Fatalf("waiter without a deadline returned %v", o.err)
					}
					want.Waiting = 1
					checkStats(t, l, want)
					holder()
					synctest.Wait()
					if g := granted(t, []*client{w}); len(g) != 1 {
						t.Fatal("waiter not granted the released slot")
					}
					w.letGo()
					synctest.Wait()
					want.Waiting, want.Holding, want.AdmittedQueued = 0, 0, 1
					checkStats(t, l, want)
					return
				}

				if tt.want > 0 {
					time.Sleep(tt.want - time.Nanosecond)
					synctest.Wait()
					if o, ok := w.returned(); ok {
						t.Fatalf("waiter returned %v after %v, want it waiting until %v", o.err, time.Since(start), tt.want)
					}
					want.Waiting = 1
					checkStats(t, l, want)
					time.Sleep(time.Nanosecond)
				}
				synctest.Wait()
				o, ok := w.returned()
				if !ok {
					t.Fatalf("waiter still waiting at %v", tt.want)
				}
				if !errors.Is(o.err, limiter.ErrQueueTimeout) {
					t.Fatalf("err = %v, want ErrQueueTimeout", o.err)
				}
				if got := o.at.Sub(start); got != tt.want {
					t.Fatalf("timed out after %v, want exactly %v", got, tt.want)
				}
				if got := w.onQueued.Load(); got != 1 {
					t.Fatalf("OnQueued called %d times, want 1", got)
				}
				want.Waiting, want.TimedOut = 0, 1
				checkStats(t, l, want)
				holder()
				want.Holding = 0
				checkStats(t, l, want)
			})
		})
	}
}

// TestDeadlineOnlyBoundsTheQueue checks that a deadline, even a past one,
// does not stop a request that finds a free slot.
func TestDeadlineOnlyBoundsTheQueue(t *testing.T) {
	tests := []struct {
		name         string
		queueTimeout time.Duration
		deadline     time.Time
	}{
		{name: "past request deadline", deadline: time.Unix(1, 0)},
		{name: "short queue timeout", queueTimeout: time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, limiter.Options{Slots: 1, QueueTimeout: tt.queueTimeout})
			release, err := l.AcquireRequest(context.Background(), limiter.Request{Deadline: tt.deadline})
			if err != nil {
				t.Fatalf("err = %v, want a direct admission", err)
			}
			release.Release()
			checkStats(t, l, limiter.Stats{Slots: 1, QueueTimeout: tt.queueTimeout, AdmittedDirect: 1})
		})
	}
}

// TestOnQueued checks that Request.OnQueued is called exactly once when
// the request enters the queue, outside the lock (it may call Stats) and
// before the wait ends, and never otherwise.
func TestOnQueued(t *testing.T) {
	tests := []struct {
		name      string
		queueLen  int
		held      bool   // the only slot is held before the call
		cancelled bool   // context ended before the call
		then      string // once queued: "grant", "cancel" or "timeout"
		wantCalls int32
		wantErr   error
	}{
		{name: "direct admission", queueLen: 1, wantCalls: 0},
		{name: "refused", queueLen: 0, held: true, wantCalls: 0, wantErr: limiter.ErrQueueFull},
		{name: "context already ended", queueLen: 1, held: true, cancelled: true, wantCalls: 0, wantErr: context.Canceled},
		{name: "queued then granted", queueLen: 1, held: true, then: "grant", wantCalls: 1},
		{name: "queued then cancelled", queueLen: 1, held: true, then: "cancel", wantCalls: 1, wantErr: context.Canceled},
		{name: "queued then timed out", queueLen: 1, held: true, then: "timeout", wantCalls: 1, wantErr: limiter.ErrQueueTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: tt.queueLen, QueueTimeout: time.Minute})
				var holder func()
				if tt.held {
					holder = acquireDirect(t, l)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelled {
					cancel()
				}
				waitingSeen := -1
				c := startClient(l, ctx, limiter.Request{OnQueued: func() {
					// Stats takes the lock: this would hang if OnQueued
					// were called under it.
					waitingSeen = l.Stats().Waiting
				}})
				synctest.Wait()
				switch tt.then {
				case "grant":
					holder()
					holder = nil
				case "cancel":
					cancel()
				case "timeout":
					time.Sleep(time.Minute)
				}
				synctest.Wait()
				o, ok := c.returned()
				if !ok {
					t.Fatal("Acquire did not return")
				}
				if !errors.Is(o.err, tt.wantErr) || (tt.wantErr == nil && o.err != nil) {
					t.Fatalf("err = %v, want %v", o.err, tt.wantErr)
				}
				if got := c.onQueued.Load(); got != tt.wantCalls {
					t.Fatalf("OnQueued called %d times, want %d", got, tt.wantCalls)
				}
				if tt.wantCalls == 1 && waitingSeen != 1 {
					t.Fatalf("OnQueued saw Waiting = %d, want 1 (the caller itself)", waitingSeen)
				}
				if o.err == nil {
					c.letGo()
				}
				if holder != nil {
					holder()
				}
				synctest.Wait()
				if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Fatalf("Holding %d Waiting %d at the end", s.Holding, s.Waiting)
				}
			})
		})
	}
}

// TestSetSlotsRaise checks that raising Slots admits waiters at once, in
// FIFO order, up to the new limit.
func TestSetSlotsRaise(t *testing.T) {
	type step struct {
		slots       int
		wantGranted int // waiters granted so far (the oldest ones)
	}
	tests := []struct {
		name    string
		slots   int
		waiters int
		steps   []step
	}{
		{name: "in two steps", slots: 1, waiters: 4, steps: []step{{3, 2}, {5, 4}}},
		{name: "past the queue", slots: 2, waiters: 3, steps: []step{{10, 3}}},
		{name: "same value", slots: 2, waiters: 2, steps: []step{{2, 0}, {3, 1}, {3, 1}}},
		{name: "one at a time", slots: 1, waiters: 3, steps: []step{{2, 1}, {3, 2}, {4, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.waiters})
				holders := acquireN(t, l, tt.slots)
				ws := queueN(t, l, tt.waiters)
				start := time.Now()
				for _, st := range tt.steps {
					if err := l.SetSlots(st.slots); err != nil {
						t.Fatalf("SetSlots(%d): %v", st.slots, err)
					}
					synctest.Wait()
					g := granted(t, ws)
					if !equalInts(g, seq(0, st.wantGranted)) {
						t.Fatalf("after SetSlots(%d): granted %v, want %v", st.slots, g, seq(0, st.wantGranted))
					}
					for _, i := range g {
						if o, _ := ws[i].returned(); !o.at.Equal(start) {
							t.Fatalf("waiter %d admitted after %v, want at once", i, o.at.Sub(start))
						}
					}
					checkStats(t, l, limiter.Stats{
						Slots: st.slots, QueueLen: tt.waiters,
						Holding: tt.slots + st.wantGranted, Waiting: tt.waiters - st.wantGranted,
						AdmittedDirect: uint64(tt.slots), AdmittedQueued: uint64(st.wantGranted),
					})
				}
				for _, r := range holders {
					r()
				}
				for pending := len(ws); pending > 0; {
					synctest.Wait()
					g := granted(t, ws)
					if len(g) == 0 {
						t.Fatal("waiters left but none granted")
					}
					for _, i := range g {
						ws[i].letGo()
						pending--
					}
				}
				synctest.Wait()
				if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Fatalf("Holding %d Waiting %d at the end", s.Holding, s.Waiting)
				}
			})
		})
	}
}

// TestSetSlotsLower checks that lowering Slots revokes nothing and that a
// release is handed to a waiter only once the holders (the releaser
// included) are within the new limit.
func TestSetSlotsLower(t *testing.T) {
	tests := []struct {
		name    string
		slots   int
		lowerTo int
		waiters int
	}{
		{name: "3 to 1", slots: 3, lowerTo: 1, waiters: 2},
		{name: "3 to 2", slots: 3, lowerTo: 2, waiters: 2},
		{name: "2 to 1 no waiters", slots: 2, lowerTo: 1, waiters: 0},
		{name: "4 to 4", slots: 4, lowerTo: 4, waiters: 3},
		{name: "5 to 1 many waiters", slots: 5, lowerTo: 1, waiters: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := max(tt.waiters, 1)
				l := newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: q})
				holders := acquireN(t, l, tt.slots)
				ws := queueN(t, l, tt.waiters)
				if err := l.SetSlots(tt.lowerTo); err != nil {
					t.Fatalf("SetSlots(%d): %v", tt.lowerTo, err)
				}
				synctest.Wait()
				if g := granted(t, ws); len(g) != 0 {
					t.Fatalf("lowering Slots granted waiters %v", g)
				}
				// Nothing is revoked.
				want := limiter.Stats{
					Slots: tt.lowerTo, QueueLen: q, Holding: tt.slots, Waiting: tt.waiters,
					AdmittedDirect: uint64(tt.slots),
				}
				checkStats(t, l, want)
				// Until holders drop below the new limit, a newcomer does
				// not get in directly either.
				if _, queued, err := probe(t, l); err == nil || (tt.waiters < q && !queued) {
					t.Fatalf("newcomer after lowering: queued %t err %v, want queued or refused", queued, err)
				} else if queued {
					want.CancelledWaiting++
				} else {
					want.RejectedFull++
				}

				// Release the original holders one at a time. A release is
				// handed on only if, counting the releaser, holders were
				// within the new limit.
				holding, waiting, grants := tt.slots, tt.waiters, 0
				for i, r := range holders {
					r()
					if holding <= tt.lowerTo && waiting > 0 {
						grants++
						waiting--
					} else {
						holding--
					}
					synctest.Wait()
					if g := granted(t, ws); !equalInts(g, seq(0, grants)) {
						t.Fatalf("after release %d: granted %v, want %v", i, g, seq(0, grants))
					}
					want.Holding, want.Waiting, want.AdmittedQueued = holding, waiting, uint64(grants)
					checkStats(t, l, want)
				}
				if holding > tt.lowerTo {
					t.Fatalf("holding %d above the new limit %d after all originals left", holding, tt.lowerTo)
				}
				// Drain the waiters; each release now passes on.
				for pending := len(ws); pending > 0; {
					g := granted(t, ws)
					if len(g) == 0 {
						t.Fatal("waiters left but none granted")
					}
					for _, i := range g {
						ws[i].letGo()
						pending--
					}
					synctest.Wait()
				}
				want.Holding, want.Waiting, want.AdmittedQueued = 0, 0, uint64(tt.waiters)
				checkStats(t, l, want)
				// Now exactly lowerTo slots can be taken directly.
				again := acquireN(t, l, tt.lowerTo)
				if release, _, err := probe(t, l); err == nil {
					release()
					t.Fatalf("request %d admitted with Slots %d", tt.lowerTo+1, tt.lowerTo)
				}
				for _, r := range again {
					r()
				}
			})
		})
	}
}

func TestSetSlotsInvalid(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{name: "zero", n: 0},
		{name: "negative", n: -1},
		{name: "min int", n: math.MinInt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, limiter.Options{Slots: 2, QueueLen: 1})
			release := acquireDirect(t, l)
			before := l.Stats()
			err := l.SetSlots(tt.n)
			if err == nil {
				t.Fatalf("SetSlots(%d) = nil, want an error", tt.n)
			}
			if want := fmt.Sprintf("slots must be at least 1, got %d", tt.n); !strings.Contains(err.Error(), want) {
				t.Fatalf("SetSlots(%d) = %q, want it to contain %q", tt.n, err, want)
			}
			checkStats(t, l, before)
			// Still two slots.
			second := acquireDirect(t, l)
			release()
			second()
		})
	}
}

func TestUnlimited(t *testing.T) {
	const n = 10000
	l := limiter.NewUnlimited()
	checkStats(t, l, limiter.Stats{Unlimited: true})
	releases := acquireN(t, l, n)
	checkStats(t, l, limiter.Stats{Unlimited: true, Holding: n, AdmittedDirect: n})

	t.Run("SetSlots", func(t *testing.T) {
		tests := []struct {
			name string
			n    int
		}{
			{name: "positive", n: 5},
			{name: "one", n: 1},
			{name: "zero", n: 0},
			{name: "negative", n: -1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := l.SetSlots(tt.n); err == nil {
					t.Fatalf("SetSlots(%d) on an unlimited limiter = nil, want an error", tt.n)
				}
				if s := l.Stats(); !s.Unlimited || s.Slots != 0 {
					t.Fatalf("after SetSlots(%d): Unlimited %t Slots %d", tt.n, s.Unlimited, s.Slots)
				}
			})
		}
	})

	// Still admitting after the failed SetSlots calls.
	releases = append(releases, acquireDirect(t, l))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with an ended context: %v, want context.Canceled", err)
	}
	for _, r := range releases {
		r()
		r()
	}
	checkStats(t, l, limiter.Stats{Unlimited: true, AdmittedDirect: n + 1})
}

// TestOnQueuedPanicLeavesNoWaiter: a panic in Request.OnQueued takes the
// waiter out of the queue, so a later release is not handed to nobody.
func TestOnQueuedPanicLeavesNoWaiter(t *testing.T) {
	l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the OnQueued panic did not propagate")
			}
		}()
		_, _ = l.AcquireRequest(context.Background(), limiter.Request{OnQueued: func() { panic("boom") }})
	}()
	if s := l.Stats(); s.Waiting != 0 || s.CancelledWaiting != 1 {
		t.Fatalf("after a panicking OnQueued: Waiting %d, CancelledWaiting %d; want 0 and 1", s.Waiting, s.CancelledWaiting)
	}
	release.Release()
	if s := l.Stats(); s.Holding != 0 {
		t.Fatalf("the released slot went to the vanished waiter: Holding %d", s.Holding)
	}
}
