package limits_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// TestRaiseAdmitsLowerKeeps checks the semantics the handler promises:
// raising N admits a waiter at once, and lowering it takes no held place
// back, the excess draining as requests finish.
func TestRaiseAdmitsLowerKeeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 2})
		if err != nil {
			t.Fatal(err)
		}
		h := limits.NewHandler(limits.Options{Limits: gate.EngineLimiter(l)})
		ctx := context.Background()
		holder, err := l.AcquireRequest(ctx, limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		admitted := acquireAsync(ctx, l, limiter.Request{})
		synctest.Wait()
		checkStats(t, "before the change", l, 1, 1)

		// The waiter is admitted within the POST: no wait is needed.
		mustPost(t, h, `{"engine_request_limit":2}`)
		checkStats(t, "after raising N to 2", l, 2, 0)
		waiter := <-admitted
		if waiter.err != nil {
			t.Fatalf("the waiter got %v, want a permit", waiter.err)
		}
		if got := l.Stats().AdmittedQueued; got != 1 {
			t.Errorf("AdmittedQueued = %d, want 1", got)
		}

		mustPost(t, h, `{"engine_request_limit":1}`)
		synctest.Wait()
		checkStats(t, "after lowering N to 1", l, 2, 0)

		// A newcomer queues, and the first release only drains the
		// excess: the newcomer waits until the holders are under N.
		next := acquireAsync(ctx, l, limiter.Request{})
		synctest.Wait()
		checkStats(t, "with a newcomer", l, 2, 1)
		holder.Release()
		synctest.Wait()
		checkStats(t, "after one release", l, 1, 1)
		waiter.p.Release()
		synctest.Wait()
		checkStats(t, "after both releases", l, 1, 0)
		last := <-next
		if last.err != nil {
			t.Fatalf("the newcomer got %v, want a permit", last.err)
		}
		last.p.Release()
	})
}

// TestLowerQueueKeepsWaiters checks that lowering Q below the waiters
// queued refuses newcomers but keeps the waiters.
func TestLowerQueueKeepsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 2})
		if err != nil {
			t.Fatal(err)
		}
		h := limits.NewHandler(limits.Options{Limits: gate.EngineLimiter(l)})
		ctx := context.Background()
		holder, err := l.AcquireRequest(ctx, limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		a := acquireAsync(ctx, l, limiter.Request{})
		synctest.Wait() // a queues first
		b := acquireAsync(ctx, l, limiter.Request{})
		synctest.Wait()
		mustPost(t, h, `{"request_queue_limit":0}`)
		synctest.Wait()
		checkStats(t, "after lowering Q to 0", l, 1, 2)
		if _, err := l.TryAcquire(limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
			t.Errorf("a newcomer got %v, want ErrQueueFull", err)
		}
		holder.Release()
		first := <-a
		first.p.Release()
		second := <-b
		second.p.Release()
		if first.err != nil || second.err != nil {
			t.Errorf("the waiters got %v and %v, want permits", first.err, second.err)
		}
	})
}

// TestRaisePrefillTokensAdmits checks P through the API: raising it admits
// a waiter its budget held back, at once, and lowering it takes back no
// admitted request's tokens; the next one waits until prefill drains.
func TestRaisePrefillTokensAdmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New(limiter.Options{Slots: 4, QueueLen: 4, PrefillTokenLimit: 100})
		if err != nil {
			t.Fatal(err)
		}
		h := limits.NewHandler(limits.Options{Limits: gate.EngineLimiter(l)})
		// Cancelled on the way out, so that a failed check does not
		// leave a waiter blocked in the bubble.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		holder, err := l.AcquireRequest(ctx, limiter.Request{Tokens: 80})
		if err != nil {
			t.Fatal(err)
		}
		admitted := acquireAsync(ctx, l, limiter.Request{Tokens: 50})
		synctest.Wait()
		checkStats(t, "with 80 of P=100 in prefill", l, 1, 1)

		mustPost(t, h, `{"engine_prefill_token_limit":200}`)
		checkStats(t, "after raising P to 200", l, 2, 0)
		waiter := <-admitted
		if waiter.err != nil {
			t.Fatalf("the waiter got %v, want a permit", waiter.err)
		}

		mustPost(t, h, `{"engine_prefill_token_limit":100}`)
		if got := l.Stats().PrefillTokens; got != 130 {
			t.Errorf("prefill tokens after lowering P to 100 = %d, want 130: none taken back", got)
		}
		next := acquireAsync(ctx, l, limiter.Request{Tokens: 10})
		synctest.Wait()
		checkStats(t, "with 130 tokens in prefill over P=100", l, 2, 1)
		holder.FirstToken() // 50 left in prefill: 10 more fit
		synctest.Wait()
		checkStats(t, "after the first request's first token", l, 3, 0)
		last := <-next
		if last.err != nil {
			t.Fatalf("the newcomer got %v, want a permit", last.err)
		}
		for _, p := range []*limiter.Permit{holder, waiter.p, last.p} {
			p.Release()
		}
	})
}

// TestQueueTokensThroughTheAPI checks the queue's token limit through the
// API: lowering it below the tokens queued keeps the waiters and refuses
// newcomers with ErrQueueTokens; unsetting it lets them queue.
func TestQueueTokensThroughTheAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 4, QueueTokenLimit: 100})
		if err != nil {
			t.Fatal(err)
		}
		h := limits.NewHandler(limits.Options{Limits: gate.EngineLimiter(l)})
		// Cancelled on the way out, so that a failed check does not
		// leave a waiter blocked in the bubble.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		holder, err := l.AcquireRequest(ctx, limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		first := acquireAsync(ctx, l, limiter.Request{Tokens: 60})
		synctest.Wait()
		mustPost(t, h, `{"request_queue_token_limit":50}`)
		checkStats(t, "after lowering the queue's tokens to 50", l, 1, 1)
		if _, err := l.TryAcquire(limiter.Request{Tokens: 10}); !errors.Is(err, limiter.ErrQueueTokens) {
			t.Fatalf("a newcomer got %v, want ErrQueueTokens", err)
		}

		mustPost(t, h, `{"request_queue_token_limit":null}`)
		if _, err := l.TryAcquire(limiter.Request{Tokens: 10}); !errors.Is(err, limiter.ErrWouldWait) {
			t.Fatalf("after unsetting the limit, a newcomer got %v, want ErrWouldWait", err)
		}
		second := acquireAsync(ctx, l, limiter.Request{Tokens: 10})
		synctest.Wait()
		checkStats(t, "after unsetting the queue's token limit", l, 1, 2)
		holder.Release()
		a := <-first
		a.p.Release()
		b := <-second
		b.p.Release()
		if a.err != nil || b.err != nil {
			t.Errorf("the waiters got %v and %v, want permits", a.err, b.err)
		}
	})
}

type acquired struct {
	p   *limiter.Permit
	err error
}

// acquireAsync asks l for a slot for req in a goroutine and sends the
// outcome.
func acquireAsync(ctx context.Context, l *limiter.Limiter, req limiter.Request) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		p, err := l.AcquireRequest(ctx, req)
		ch <- acquired{p, err}
	}()
	return ch
}

func checkStats(t *testing.T, when string, l *limiter.Limiter, holding, waiting int) {
	t.Helper()
	if s := l.Stats(); s.Holding != holding || s.Waiting != waiting {
		t.Errorf("%s: holding %d, waiting %d; want %d and %d", when, s.Holding, s.Waiting, holding, waiting)
	}
}

func mustPost(t *testing.T, h http.Handler, body string) {
	t.Helper()
	if w := serve(t, h, post(body)); w.Code != http.StatusOK {
		t.Fatalf("POST %s: status = %d; body %s", body, w.Code, w.Body)
	}
}

// TestPerRank checks that with limits per rank the values are each
// rank's, and a change reaches every rank.
func TestPerRank(t *testing.T) {
	g, err := gate.RankLimiters(3, func() (*limiter.Limiter, error) {
		return limiter.New(limiter.Options{Slots: 2, QueueLen: 4, PrefillTokenLimit: 1000})
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{t: t}
	h := limits.NewHandler(rec.options(g))
	w := serve(t, h, get())
	jsonEqual(t, w.Body.String(), `{"engine_request_limit":2,"engine_request_waiting_limit":null,"request_queue_limit":4,`+
		`"engine_prefill_token_limit":1000,"request_queue_token_limit":null,"per_rank":true,"gate":"on"}`)

	w = serve(t, h, post(`{"engine_request_waiting_limit":1,"request_queue_token_limit":4000}`))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
	}
	jsonEqual(t, w.Body.String(), `{"engine_request_limit":2,"engine_request_waiting_limit":1,"request_queue_limit":4,`+
		`"engine_prefill_token_limit":1000,"request_queue_token_limit":4000,"per_rank":true,"gate":"on"}`)
	for i, s := range g.RankStats() {
		if s.Slots != 2 || s.WaitingLimit != 1 || s.QueueLen != 4 || s.PrefillTokenLimit != 1000 || s.QueueTokenLimit != 4000 {
			t.Errorf("rank %d: N=%d W=%d Q=%d P=%d T=%d, want 2, 1, 4, 1000, 4000",
				i, s.Slots, s.WaitingLimit, s.QueueLen, s.PrefillTokenLimit, s.QueueTokenLimit)
		}
	}
	if len(rec.logs) != 1 || rec.logs[0].kv["per_rank"] != true {
		t.Errorf("logged %v, want one change with per_rank true", rec.logs)
	}
}

// TestConcurrentPartialUpdates checks that partial updates merge into the
// limits in force atomically: concurrent POSTs of different keys never
// undo each other.
func TestConcurrentPartialUpdates(t *testing.T) {
	g := newGate(t, limiter.Limits{Slots: 1, QueueLen: 0})
	var mu sync.Mutex // Changed may be called concurrently
	changed := 0
	h := limits.NewHandler(limits.Options{Limits: g, Changed: func() {
		mu.Lock()
		changed++
		mu.Unlock()
	}})
	const rounds = 50
	var posters sync.WaitGroup
	keys := []string{
		"engine_request_limit", "engine_request_waiting_limit", "request_queue_limit",
		"engine_prefill_token_limit", "request_queue_token_limit",
	}
	for _, key := range keys {
		posters.Go(func() {
			for i := 1; i <= rounds; i++ {
				w := serve(t, h, post(`{"`+key+`":`+strconv.Itoa(i+1)+`}`))
				if w.Code != http.StatusOK {
					t.Errorf("POST %s=%d: status %d; body %s", key, i+1, w.Code, w.Body)
				}
			}
		})
	}
	posters.Wait()
	want := limiter.Limits{
		Slots: rounds + 1, WaitingLimit: rounds + 1, QueueLen: rounds + 1,
		PrefillTokenLimit: rounds + 1, QueueTokenLimit: rounds + 1,
	}
	if got := g.Limits(); got != want {
		t.Errorf("limits = %+v, want %+v: a partial update undid another", got, want)
	}
	if changed != len(keys)*rounds {
		t.Errorf("Changed called %d times, want %d", changed, len(keys)*rounds)
	}
}

// racingGate is a gate where another change lands just before each of
// the handler's: between any read the handler made and its write.
type racingGate struct {
	*gate.Limiters
	other func(limiter.Limits) limiter.Limits
}

func (g racingGate) SetLimits(f func(limiter.Limits) limiter.Limits) (old, now limiter.Limits, err error) {
	if _, _, err := g.Limiters.SetLimits(g.other); err != nil {
		return old, now, err
	}
	return g.Limiters.SetLimits(f)
}

// TestMergeIsAtomic checks that a POST merges into the limits in force
// when it writes, not into limits it read earlier, so that a change made
// in between is kept; and that the check that one engine limit stays set
// sees that change too.
func TestMergeIsAtomic(t *testing.T) {
	g := newGate(t, limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8})
	setQ := racingGate{g, func(l limiter.Limits) limiter.Limits { l.QueueLen = 9; return l }}
	w := serve(t, limits.NewHandler(limits.Options{Limits: setQ}), post(`{"engine_request_limit":5}`))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
	}
	if got, want := g.Limits(), (limiter.Limits{Slots: 5, WaitingLimit: 2, QueueLen: 9}); got != want {
		t.Errorf("limits = %+v, want %+v: the change in between was lost", got, want)
	}

	// W is unset in between, so unsetting N must now be refused.
	unsetW := racingGate{g, func(l limiter.Limits) limiter.Limits { l.WaitingLimit = 0; return l }}
	w = serve(t, limits.NewHandler(limits.Options{Limits: unsetW}), post(`{"engine_request_limit":null}`))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400; body %s", w.Code, w.Body)
	}
	if got, want := g.Limits(), (limiter.Limits{Slots: 5, QueueLen: 9}); got != want {
		t.Errorf("limits = %+v, want %+v", got, want)
	}
}
