package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/limiter"
)

// Tests of the prefill-token budget (P) and the queue's token limit. Like
// the scripts of waiting_test.go, they run events on a limiter in a
// synctest bubble and check, after every event, which waiters it admitted
// and the gauges, tokens included.

// tokenStep is one event of a token script: "acquire" (a new request of
// tokens tokens and class class, numbered from 0 in the order of the
// acquire steps), "first i", "release i", "cancel i" (the context of
// waiting request i ends) or "set" (SetLimits(lim)).
type tokenStep struct {
	do     string
	tokens int64
	class  int
	lim    limiter.Limits
	// want is, for acquire, "direct", "queued", "full" or "tokens"
	// (ErrQueueTokens); for set, "" or a fragment of the error.
	want string
	// admits are the queued requests this step admits, in any order.
	admits []int
	// prefill and queued are the tokens in prefill and in the queue after
	// the step, and waiting the number of waiters.
	prefill, queued int64
	waiting         int
}

// runTokenScript runs steps on a limiter made with opts, in a synctest
// bubble, and checks the counters at the end.
func runTokenScript(t *testing.T, opts limiter.Options, steps []tokenStep) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		t.Helper()
		l := newLimiter(t, opts)
		var reqs []*request
		defer func() { // the waiters leave and the holders release, should a check fail or not
			for _, r := range reqs {
				r.cancel()
			}
			synctest.Wait()
			for _, r := range reqs {
				if a, ok := r.returned(); ok && a.p != nil {
					a.p.Release()
				}
			}
		}()
		queued := map[int]bool{} // waiting, not yet admitted
		var refusedTokens, admitted uint64
		for n, st := range steps {
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
				r := startRequest(l, limiter.Request{Tokens: st.tokens, Class: st.class})
				reqs = append(reqs, r)
				synctest.Wait()
				got := acquireOutcome(r)
				if got == "queued" {
					queued[len(reqs)-1] = true
				}
				if got == "tokens" {
					refusedTokens++
				}
				if got != st.want {
					t.Fatalf("step %d: request %d of %d tokens is %s, want %s", n, len(reqs)-1, st.tokens, got, st.want)
				}
			case "first":
				permit().FirstToken()
			case "release":
				permit().Release()
			case "cancel":
				if !queued[i] {
					t.Fatalf("step %d %q: request %d does not wait", n, st.do, i)
				}
				reqs[i].cancel()
				synctest.Wait()
				if a, ok := reqs[i].returned(); !ok || !errors.Is(a.err, context.Canceled) {
					t.Fatalf("step %d %q: request %d returned %v, %t; want context.Canceled", n, st.do, i, a.err, ok)
				}
				delete(queued, i)
			case "set":
				err := l.SetLimits(st.lim)
				switch {
				case st.want == "" && err != nil:
					t.Fatalf("step %d: SetLimits(%+v): %v", n, st.lim, err)
				case st.want != "" && (err == nil || !strings.Contains(err.Error(), st.want)):
					t.Fatalf("step %d: SetLimits(%+v) = %v, want an error containing %q", n, st.lim, err, st.want)
				}
			default:
				t.Fatalf("step %d: unknown %q", n, st.do)
			}
			synctest.Wait()
			var fresh []int
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
			if s.PrefillTokens != st.prefill || s.QueuedTokens != st.queued || s.Waiting != st.waiting {
				t.Fatalf("step %d %q: prefill tokens, queued tokens, waiting = %d, %d, %d; want %d, %d, %d",
					n, st.do, s.PrefillTokens, s.QueuedTokens, s.Waiting, st.prefill, st.queued, st.waiting)
			}
			if err := l.CheckInvariants(); err != nil {
				t.Fatalf("step %d %q: %v", n, st.do, err)
			}
		}
		if s := l.Stats(); s.RejectedTokens != refusedTokens || s.AdmittedQueued != admitted {
			t.Errorf("RejectedTokens %d, AdmittedQueued %d; callers saw %d and %d", s.RejectedTokens, s.AdmittedQueued, refusedTokens, admitted)
		}
	})
}

// acquireOutcome names what a request has come to just after its start.
func acquireOutcome(r *request) string {
	a, ok := r.returned()
	switch {
	case !ok && r.onQueued.Load() == 1:
		return "queued"
	case ok && a.err == nil && r.onQueued.Load() == 0:
		return "direct"
	case ok && errors.Is(a.err, limiter.ErrQueueFull) && r.onQueued.Load() == 0:
		return "full"
	case ok && errors.Is(a.err, limiter.ErrQueueTokens) && r.onQueued.Load() == 0:
		return "tokens"
	}
	return fmt.Sprintf("%v (returned %t, permit %t, OnQueued %d)", a.err, ok, a.p != nil, r.onQueued.Load())
}

// TestPrefillTokenLimit checks P: requests are admitted while their
// tokens fit beside those in prefill, one larger than P alone when prefill
// is empty; FirstToken or Release frees the tokens; a waiter that does not
// fit holds up those behind it (FIFO and DRR); changes of P at run time.
func TestPrefillTokenLimit(t *testing.T) {
	tests := []struct {
		name  string
		opts  limiter.Options
		steps []tokenStep
	}{
		{
			name: "600-token requests with P=1000 never overlap",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 600, want: "direct", prefill: 600},
				{do: "acquire", tokens: 600, want: "queued", prefill: 600, queued: 600, waiting: 1},
				{do: "acquire", tokens: 600, want: "queued", prefill: 600, queued: 1200, waiting: 2},
				{do: "first 0", admits: []int{1}, prefill: 600, queued: 600, waiting: 1},
				// Release without FirstToken frees the tokens too.
				{do: "release 1", admits: []int{2}, prefill: 600},
				{do: "release 0", prefill: 600},
				{do: "first 2"},
			},
		},
		{
			name: "200-token requests run five at a time",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 200, want: "direct", prefill: 200},
				{do: "acquire", tokens: 200, want: "direct", prefill: 400},
				{do: "acquire", tokens: 200, want: "direct", prefill: 600},
				{do: "acquire", tokens: 200, want: "direct", prefill: 800},
				{do: "acquire", tokens: 200, want: "direct", prefill: 1000},
				{do: "acquire", tokens: 200, want: "queued", prefill: 1000, queued: 200, waiting: 1},
				{do: "acquire", tokens: 200, want: "queued", prefill: 1000, queued: 400, waiting: 2},
				{do: "first 3", admits: []int{5}, prefill: 1000, queued: 200, waiting: 1},
				{do: "first 0", admits: []int{6}, prefill: 1000},
			},
		},
		{
			name: "a 1500-token request runs alone, admitted when prefill empties",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 200, want: "direct", prefill: 200},
				{do: "acquire", tokens: 300, want: "direct", prefill: 500},
				{do: "acquire", tokens: 1500, want: "queued", prefill: 500, queued: 1500, waiting: 1},
				// 100 would fit beside 500, but waits behind the large one.
				{do: "acquire", tokens: 100, want: "queued", prefill: 500, queued: 1600, waiting: 2},
				{do: "first 0", prefill: 300, queued: 1600, waiting: 2},
				{do: "release 1", admits: []int{2}, prefill: 1500, queued: 100, waiting: 1},
				// Nothing fits beside it, not even a request of no tokens.
				{do: "acquire", want: "queued", prefill: 1500, queued: 100, waiting: 2},
				{do: "first 2", admits: []int{3, 4}, prefill: 100},
				{do: "first 3"},
				// Into an empty prefill it is admitted at once.
				{do: "acquire", tokens: 1500, want: "direct", prefill: 1500},
				{do: "acquire", tokens: 1, want: "queued", prefill: 1500, queued: 1, waiting: 1},
				{do: "release 5", admits: []int{6}, prefill: 1},
			},
		},
		{
			name: "exactly P fits, one token more does not",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 10},
			steps: []tokenStep{
				{do: "acquire", tokens: 4, want: "direct", prefill: 4},
				{do: "acquire", tokens: 6, want: "direct", prefill: 10},
				{do: "acquire", tokens: 1, want: "queued", prefill: 10, queued: 1, waiting: 1},
				{do: "first 0", admits: []int{2}, prefill: 7},
			},
		},
		{
			name: "requests of no tokens do not count; negative counts as 0",
			opts: limiter.Options{Slots: 3, QueueLen: 2, PrefillTokenLimit: 10},
			steps: []tokenStep{
				{do: "acquire", tokens: 10, want: "direct", prefill: 10},
				{do: "acquire", tokens: 0, want: "direct", prefill: 10},
				{do: "acquire", tokens: -5, want: "direct", prefill: 10},
				{do: "acquire", tokens: -5, want: "queued", prefill: 10, waiting: 1},
				{do: "release 1", admits: []int{3}, prefill: 10},
			},
		},
		{
			name: "N still bounds requests that fit P",
			opts: limiter.Options{Slots: 2, QueueLen: 2, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 10, want: "direct", prefill: 10},
				{do: "acquire", tokens: 10, want: "direct", prefill: 20},
				{do: "acquire", tokens: 10, want: "queued", prefill: 20, queued: 10, waiting: 1},
				// The tokens are freed, the slot is not.
				{do: "first 0", prefill: 10, queued: 10, waiting: 1},
				{do: "release 0", admits: []int{2}, prefill: 20},
			},
		},
		{
			name: "a cancelled waiter's tokens leave the queue, and those behind it may fit",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 800, want: "direct", prefill: 800},
				{do: "acquire", tokens: 500, want: "queued", prefill: 800, queued: 500, waiting: 1},
				{do: "acquire", tokens: 100, want: "queued", prefill: 800, queued: 600, waiting: 2},
				{do: "acquire", tokens: 300, want: "queued", prefill: 800, queued: 900, waiting: 3},
				{do: "cancel 3", prefill: 800, queued: 600, waiting: 2},
				{do: "cancel 1", admits: []int{2}, prefill: 900},
			},
		},
		{
			name: "with classes, the waiter the round robin serves next holds up the others",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000,
				Classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}}},
			steps: []tokenStep{
				{do: "acquire", tokens: 900, want: "direct", prefill: 900},
				{do: "acquire", tokens: 500, want: "queued", prefill: 900, queued: 500, waiting: 1},
				{do: "acquire", tokens: 50, class: 1, want: "queued", prefill: 900, queued: 550, waiting: 2},
				{do: "acquire", tokens: 500, want: "queued", prefill: 900, queued: 1050, waiting: 3},
				// Class a's 500, then class b's 50; class a's next 500 does
				// not fit beside them.
				{do: "first 0", admits: []int{1, 2}, prefill: 550, queued: 500, waiting: 1},
				{do: "acquire", tokens: 600, class: 1, want: "queued", prefill: 550, queued: 1100, waiting: 2},
				{do: "first 2", admits: []int{3}, prefill: 1000, queued: 600, waiting: 1},
				// Class b's 600 is next, and would fit beside 500 only.
				{do: "first 1", prefill: 500, queued: 600, waiting: 1},
				{do: "first 3", admits: []int{4}, prefill: 600},
			},
		},
		{
			name: "raising P admits waiters at once; unsetting it admits all",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 600, want: "direct", prefill: 600},
				{do: "acquire", tokens: 600, want: "queued", prefill: 600, queued: 600, waiting: 1},
				{do: "acquire", tokens: 600, want: "queued", prefill: 600, queued: 1200, waiting: 2},
				{do: "acquire", tokens: 600, want: "queued", prefill: 600, queued: 1800, waiting: 3},
				{do: "set", lim: limiter.Limits{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1200}, admits: []int{1}, prefill: 1200, queued: 1200, waiting: 2},
				{do: "set", lim: limiter.Limits{Slots: 8, QueueLen: 8}, admits: []int{2, 3}, prefill: 2400},
			},
		},
		{
			name: "lowering P takes nothing back, and what is freed above it is not handed on",
			opts: limiter.Options{Slots: 8, QueueLen: 8, PrefillTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 400, want: "direct", prefill: 400},
				{do: "acquire", tokens: 400, want: "direct", prefill: 800},
				{do: "acquire", tokens: 200, want: "direct", prefill: 1000},
				{do: "acquire", tokens: 200, want: "queued", prefill: 1000, queued: 200, waiting: 1},
				{do: "set", lim: limiter.Limits{Slots: 8, QueueLen: 8, PrefillTokenLimit: 500}, prefill: 1000, queued: 200, waiting: 1},
				{do: "first 0", prefill: 600, queued: 200, waiting: 1},
				{do: "first 2", prefill: 400, queued: 200, waiting: 1},
				{do: "release 1", admits: []int{3}, prefill: 200},
				{do: "acquire", tokens: 300, want: "direct", prefill: 500},
				{do: "acquire", tokens: 1, want: "queued", prefill: 500, queued: 1, waiting: 1},
				{do: "set", lim: limiter.Limits{Slots: 8, QueueLen: 8, PrefillTokenLimit: -1}, want: "prefill token limit must not be negative, got -1",
					prefill: 500, queued: 1, waiting: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTokenScript(t, tt.opts, tt.steps) })
	}
}

// TestQueueTokenLimit checks the queue's token limit: a request that would
// take the queued tokens beyond it is refused with ErrQueueTokens, unless
// the queue is empty; a full queue is still ErrQueueFull; lowering the
// limit keeps the waiters.
func TestQueueTokenLimit(t *testing.T) {
	tests := []struct {
		name  string
		opts  limiter.Options
		steps []tokenStep
	}{
		{
			name: "refused beyond the limit, exactly at it queued",
			opts: limiter.Options{Slots: 1, QueueLen: 8, QueueTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 5000, want: "direct", prefill: 5000},
				{do: "acquire", tokens: 600, want: "queued", prefill: 5000, queued: 600, waiting: 1},
				{do: "acquire", tokens: 401, want: "tokens", prefill: 5000, queued: 600, waiting: 1},
				{do: "acquire", tokens: 400, want: "queued", prefill: 5000, queued: 1000, waiting: 2},
				{do: "acquire", tokens: 1, want: "tokens", prefill: 5000, queued: 1000, waiting: 2},
				// A request of no tokens still fits.
				{do: "acquire", want: "queued", prefill: 5000, queued: 1000, waiting: 3},
				{do: "cancel 1", prefill: 5000, queued: 400, waiting: 2},
				{do: "acquire", tokens: 600, want: "queued", prefill: 5000, queued: 1000, waiting: 3},
			},
		},
		{
			name: "into an empty queue a request is not refused for its size",
			opts: limiter.Options{Slots: 1, QueueLen: 8, QueueTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", tokens: 10, want: "direct", prefill: 10},
				{do: "acquire", tokens: 1200, want: "queued", prefill: 10, queued: 1200, waiting: 1},
				{do: "acquire", want: "tokens", prefill: 10, queued: 1200, waiting: 1},
				{do: "release 0", admits: []int{1}, prefill: 1200},
				{do: "acquire", tokens: 3000, want: "queued", prefill: 1200, queued: 3000, waiting: 1},
			},
		},
		{
			name: "a full queue is ErrQueueFull, before the tokens",
			opts: limiter.Options{Slots: 1, QueueLen: 1, QueueTokenLimit: 100},
			steps: []tokenStep{
				{do: "acquire", tokens: 10, want: "direct", prefill: 10},
				{do: "acquire", tokens: 50, want: "queued", prefill: 10, queued: 50, waiting: 1},
				{do: "acquire", tokens: 500, want: "full", prefill: 10, queued: 50, waiting: 1},
			},
		},
		{
			name: "lowering the limit keeps the waiters and refuses newcomers",
			opts: limiter.Options{Slots: 1, QueueLen: 8, QueueTokenLimit: 1000},
			steps: []tokenStep{
				{do: "acquire", want: "direct"},
				{do: "acquire", tokens: 300, want: "queued", queued: 300, waiting: 1},
				{do: "acquire", tokens: 300, want: "queued", queued: 600, waiting: 2},
				{do: "set", lim: limiter.Limits{Slots: 1, QueueLen: 8, QueueTokenLimit: 100}, queued: 600, waiting: 2},
				{do: "acquire", want: "tokens", queued: 600, waiting: 2},
				{do: "release 0", admits: []int{1}, prefill: 300, queued: 300, waiting: 1},
				{do: "set", lim: limiter.Limits{Slots: 1, QueueLen: 8, QueueTokenLimit: -3}, want: "queue token limit must not be negative, got -3",
					prefill: 300, queued: 300, waiting: 1},
				{do: "set", lim: limiter.Limits{Slots: 1, QueueLen: 8}, prefill: 300, queued: 300, waiting: 1},
				{do: "acquire", tokens: 1 << 50, want: "queued", prefill: 300, queued: 300 + 1<<40, waiting: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTokenScript(t, tt.opts, tt.steps) })
	}
}

// TestTokenCount checks a count that grows while the request waits: the
// queued tokens follow each Raise, the grant fixes what the request holds
// in prefill, and Raises after it change nothing.
func TestTokenCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, limiter.Options{Slots: 4, QueueLen: 4, PrefillTokenLimit: 1000, QueueTokenLimit: 500})
		first, err := l.AcquireRequest(context.Background(), limiter.Request{Tokens: 950})
		if err != nil {
			t.Fatal(err)
		}
		var count limiter.TokenCount
		count.Raise(100) // before the request arrives
		r := startRequest(l, limiter.Request{Tokens: 50, TokenCount: &count})
		synctest.Wait()
		tokens := func(step string, prefill, queued int64) {
			t.Helper()
			if s := l.Stats(); s.PrefillTokens != prefill || s.QueuedTokens != queued {
				t.Fatalf("%s: prefill, queued tokens = %d, %d; want %d, %d", step, s.PrefillTokens, s.QueuedTokens, prefill, queued)
			}
			if err := l.CheckInvariants(); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		tokens("queued with a count of 100", 950, 100)
		count.Raise(80) // lower: nothing changes
		tokens("a lower Raise", 950, 100)
		count.Raise(450)
		tokens("raised while waiting", 950, 450)
		// The queue's token limit still counts the grown waiter.
		if _, err := l.TryAcquire(limiter.Request{Tokens: 51}); !errors.Is(err, limiter.ErrQueueTokens) {
			t.Fatalf("TryAcquire of 51 tokens beside 450 queued of 500: %v, want ErrQueueTokens", err)
		}
		// Growth beyond the queue's limit keeps the request queued.
		count.Raise(700)
		tokens("raised beyond the queue's limit", 950, 700)
		if _, ok := r.returned(); ok {
			t.Fatal("the grown request left the queue")
		}
		// 950 + 700 does not fit P: the first token of the first request
		// lets it in, with the tokens it has now.
		first.FirstToken()
		synctest.Wait()
		a, ok := r.returned()
		if !ok || a.err != nil {
			t.Fatalf("after the first token: returned %t, err %v; want admitted", ok, a.err)
		}
		tokens("granted", 700, 0)
		count.Raise(5000)
		tokens("raised after the grant", 700, 0)
		a.p.FirstToken()
		tokens("its first token", 0, 0)
		a.p.Release()
		first.Release()
	})
}

// TestTryAcquireTokens checks TryAcquire with tokens: admitted when they
// fit, ErrWouldWait when the request would queue, ErrQueueTokens when the
// queue's token limit refuses it; and the per-class gauges and counters.
func TestTryAcquireTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, limiter.Options{Slots: 4, QueueLen: 4, PrefillTokenLimit: 100, QueueTokenLimit: 100,
			Classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}}})
		p, err := l.TryAcquire(limiter.Request{Tokens: 90})
		if err != nil {
			t.Fatalf("TryAcquire of 90 tokens: %v", err)
		}
		if _, err := l.TryAcquire(limiter.Request{Tokens: 20, Class: 1}); !errors.Is(err, limiter.ErrWouldWait) {
			t.Fatalf("TryAcquire of 20 tokens beside 90: %v, want ErrWouldWait", err)
		}
		r := startRequest(l, limiter.Request{Tokens: 60, Class: 1})
		synctest.Wait()
		if _, err := l.TryAcquire(limiter.Request{Tokens: 41}); !errors.Is(err, limiter.ErrQueueTokens) {
			t.Fatalf("TryAcquire of 41 tokens beside 60 queued: %v, want ErrQueueTokens", err)
		}
		s := l.Stats()
		want := []limiter.ClassStats{{Name: "a", RejectedTokens: 1}, {Name: "b", Waiting: 1, QueuedTokens: 60}}
		if s.PrefillTokenLimit != 100 || s.QueueTokenLimit != 100 || s.PrefillTokens != 90 || s.QueuedTokens != 60 ||
			s.RejectedTokens != 1 || s.RejectedFull != 0 || !slices.Equal(s.Classes, want) {
			t.Fatalf("Stats = %+v; want limits 100, 100, tokens 90, 60, one RejectedTokens, classes %+v", s, want)
		}
		p.Release()
		synctest.Wait()
		a, ok := r.returned()
		if !ok || a.err != nil {
			t.Fatalf("waiter after the release: returned %t, err %v", ok, a.err)
		}
		a.p.Release()
	})
}

// TestUnlimitedCountsTokens checks that a pass-through limiter counts the
// tokens in prefill, so the gauge keeps its meaning, and never refuses.
func TestUnlimitedCountsTokens(t *testing.T) {
	l := limiter.NewUnlimited()
	var ps []*limiter.Permit
	for range 3 {
		p, err := l.AcquireRequest(context.Background(), limiter.Request{Tokens: 1 << 39})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if s := l.Stats(); s.PrefillTokens != 3<<39 || s.PrefillTokenLimit != 0 || s.QueueTokenLimit != 0 {
		t.Fatalf("Stats = %+v, want 3<<39 tokens in prefill and no token limits", s)
	}
	ps[0].FirstToken()
	for _, p := range ps {
		p.Release()
	}
	if s := l.Stats(); s.PrefillTokens != 0 {
		t.Fatalf("PrefillTokens = %d after every release, want 0", s.PrefillTokens)
	}
}

// TestZeroTokensAlwaysFit: a request with no prompt tokens (a gRPC call,
// an embeddings request) adds nothing to prefill, so it is admitted
// beside an oversized prompt and above a lowered P.
func TestZeroTokensAlwaysFit(t *testing.T) {
	l, err := limiter.New(limiter.Options{Slots: 4, QueueLen: 2, PrefillTokenLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	big, err := l.TryAcquire(limiter.Request{Tokens: 1500})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Release()
	p, err := l.TryAcquire(limiter.Request{})
	if err != nil {
		t.Fatalf("a request of no tokens beside a 1500-token prompt over P=1000: %v, want admitted", err)
	}
	p.Release()
	if _, err := l.TryAcquire(limiter.Request{Tokens: 1}); !errors.Is(err, limiter.ErrWouldWait) {
		t.Errorf("a request of 1 token: %v, want ErrWouldWait", err)
	}
}
