package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// TestModel drives a limiter with many goroutines doing random Acquire
// calls (plain, cancelled before or while waiting, with a context timeout
// or a request deadline; of random prompt tokens, some with a TokenCount
// raised while they wait; some holding their queue place first, with
// TryReserve, for a few yields, then asking with it or dropping it)
// while a changer alters the limits at random
// (SetSlots on N alone, or SetLimits on N, W, Q, P and the queue token
// limit, now and then with invalid limits that must be refused). Each admitted request reports its
// first token never, once, twice, concurrently with its Release or after
// it, and releases once or twice. It checks:
//
//   - the caps: the observed number of holders, and of holders before
//     their first token, never exceed the bounds that the changes allow
//     (checked on every increment): after a change to N (or W), holding
//     (prefilling) is at most max(N, holding then) (max(W, prefilling
//     then)), since the limiter admits only while under both limits;
//   - the prefill-token budget, exactly: the observed tokens in prefill
//     stay within max(P, tokens in prefill when P was last set), except
//     for a single request larger than that alone (no other observed
//     tokens); from Stats, queued tokens beyond the queue token limit (or
//     the tokens queued when it was lowered) only for a single waiter, or
//     after a TokenCount grew;
//   - lowering takes nothing back and what is freed above a lowered limit
//     is not handed on: at the changer's next read, holding is at most
//     max(N, h0-k) where k is a lower bound on the releases run since, and
//     prefilling at most max(W, p0-k') with k' the waiting places freed;
//   - from a Stats sampler: Waiting within Q, or the waiters queued when Q
//     was lowered; Prefilling within [0, Holding], tokens only with
//     requests; room under both limits, with P unset or no tokens in
//     prefill, implies an empty queue (Stats reads those under the lock); counters
//     monotonic; no LIFO grant without AdaptiveLIFO;
//   - after every operation, the internal invariants under the lock
//     (CheckInvariants, export_test.go), which is what makes "no false
//     ErrQueueFull" checkable: AcquireRequest refuses only when its direct
//     branch is not taken (no room under N or W, or waiting > 0) and the
//     queue is full; with room under both implying waiting == 0 and
//     waiting never above the queue bound, a refusal means a limit was
//     reached or someone waited, and the queue was full;
//   - per call: OnQueued at most once, and only for outcomes that queue;
//   - at the end, the counters reconcile exactly with what callers saw,
//     no more LIFO grants than queue timeouts, Holding == Prefilling ==
//     Waiting == 0, no tokens left, and a fresh Acquire is admitted
//     directly.
//
// Holding times are goroutine yields, not sleeps.
func TestModel(t *testing.T) {
	ops := 4000
	if testing.Short() {
		ops = 600
	}
	const (
		setSlots  = changeSlots
		setLimits = changeLimits
		short     = 20 * time.Microsecond
		medium    = 50 * time.Microsecond
	)
	tests := []struct {
		name         string
		slots        int // N; 0 unset
		waitingLimit int // W; 0 unset
		queueLen     int
		queueTimeout time.Duration
		adaptiveLIFO bool
		change       change
		unlimited    bool
		classes      []limiter.Class
		// prefillTokens (P) and queueTokens are the token limits;
		// maxTokens the largest prompt drawn (0: all requests carry none).
		prefillTokens, queueTokens, maxTokens int64
	}{
		// N only.
		{name: "N=1 Q=0", slots: 1},
		{name: "N=1 Q=8", slots: 1, queueLen: 8},
		{name: "N=4 Q=16 timeout", slots: 4, queueLen: 16, queueTimeout: medium},
		{name: "N=8 Q=64 set slots", slots: 8, queueLen: 64, change: setSlots},
		{name: "N=16 Q=4 set slots timeout", slots: 16, queueLen: 4, queueTimeout: short, change: setSlots},
		{name: "N=2 Q=128 set slots", slots: 2, queueLen: 128, change: setSlots},
		{name: "N=32 Q=32 set slots", slots: 32, queueLen: 32, change: setSlots},
		{name: "N=2 Q=32 timeout LIFO", slots: 2, queueLen: 32, queueTimeout: short, adaptiveLIFO: true},
		{name: "N=4 Q=16 set limits", slots: 4, queueLen: 16, change: setLimits},
		{name: "unlimited", unlimited: true},
		// N and W, W only.
		{name: "N=8 W=2 Q=16", slots: 8, waitingLimit: 2, queueLen: 16},
		{name: "N=2 W=2 Q=8", slots: 2, waitingLimit: 2, queueLen: 8},
		{name: "N=4 W=1 Q=0", slots: 4, waitingLimit: 1},
		{name: "W=3 Q=8", waitingLimit: 3, queueLen: 8},
		{name: "W=1 Q=0", waitingLimit: 1},
		{name: "N=6 W=3 Q=32 timeout", slots: 6, waitingLimit: 3, queueLen: 32, queueTimeout: medium},
		{name: "N=4 W=2 Q=32 timeout LIFO", slots: 4, waitingLimit: 2, queueLen: 32, queueTimeout: short, adaptiveLIFO: true},
		{name: "W=2 Q=64 timeout LIFO set limits", waitingLimit: 2, queueLen: 64, queueTimeout: short, adaptiveLIFO: true, change: setLimits},
		{name: "N=3 W=2 Q=16 set slots", slots: 3, waitingLimit: 2, queueLen: 16, change: setSlots},
		{name: "N=8 W=3 Q=16 set limits", slots: 8, waitingLimit: 3, queueLen: 16, change: setLimits},
		{name: "N=16 W=4 Q=4 set limits timeout", slots: 16, waitingLimit: 4, queueLen: 4, queueTimeout: short, change: setLimits},
		{name: "W=4 Q=0 set limits", waitingLimit: 4, change: setLimits},
		// Classes.
		{name: "classes N=1 Q=8", slots: 1, queueLen: 8, classes: []limiter.Class{
			{Name: "a", Quantum: 3}, {Name: "b", Quantum: 1, Limit: 2}}},
		{name: "classes N=4 Q=32 set slots timeout", slots: 4, queueLen: 32, queueTimeout: medium, change: setSlots,
			classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: 20}, {Name: "b", Quantum: 2}, {Name: "c", Quantum: 7, Limit: 3}}},
		{name: "classes N=8 Q=16 set slots", slots: 8, queueLen: 16, change: setSlots, classes: []limiter.Class{
			{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}, {Name: "c", Quantum: 2}, {Name: "d", Quantum: 5, Limit: 1}}},
		{name: "classes N=4 W=2 Q=16 timeout LIFO set limits", slots: 4, waitingLimit: 2, queueLen: 16, queueTimeout: short,
			adaptiveLIFO: true, change: setLimits,
			classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: 10}, {Name: "b", Quantum: 3}, {Name: "c", Quantum: 2, Limit: 4}}},
		{name: "classes W=2 Q=12 set limits", waitingLimit: 2, queueLen: 12, change: setLimits, classes: []limiter.Class{
			{Name: "a", Quantum: 2}, {Name: "b", Quantum: 1, Limit: 3}}},
		// Tokens.
		{name: "N=8 P=1000 Q=16", slots: 8, queueLen: 16, prefillTokens: 1000, maxTokens: 1500},
		{name: "N=32 P=300 QT=300 Q=64 timeout", slots: 32, queueLen: 64, queueTimeout: medium,
			prefillTokens: 300, queueTokens: 300, maxTokens: 200},
		{name: "N=16 P=500 QT=600 Q=8 set limits", slots: 16, queueLen: 8, change: setLimits,
			prefillTokens: 500, queueTokens: 600, maxTokens: 700},
		{name: "N=8 W=4 P=1000 QT=2000 Q=32 timeout LIFO set limits", slots: 8, waitingLimit: 4, queueLen: 32,
			queueTimeout: short, adaptiveLIFO: true, change: setLimits, prefillTokens: 1000, queueTokens: 2000, maxTokens: 1500},
		{name: "N=4 P=1000 Q=16 set slots", slots: 4, queueLen: 16, change: setSlots, prefillTokens: 1000, maxTokens: 800},
		{name: "classes N=6 P=1000 QT=3000 Q=16 set limits", slots: 6, queueLen: 16, change: setLimits,
			prefillTokens: 1000, queueTokens: 3000, maxTokens: 1200,
			classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: 10}, {Name: "b", Quantum: 3}}},
		{name: "unlimited tokens", unlimited: true, maxTokens: 1000},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano()) + uint64(i)
			t.Logf("seed %d", seed)
			var l *limiter.Limiter
			if tt.unlimited {
				l = limiter.NewUnlimited()
			} else {
				l = newLimiter(t, limiter.Options{
					Slots: tt.slots, WaitingLimit: tt.waitingLimit, QueueLen: tt.queueLen,
					QueueTimeout: tt.queueTimeout, AdaptiveLIFO: tt.adaptiveLIFO, Classes: tt.classes,
					PrefillTokenLimit: tt.prefillTokens, QueueTokenLimit: tt.queueTokens,
				})
			}
			m := &model{t: t, l: l, unlimited: tt.unlimited, lifo: tt.adaptiveLIFO, classes: tt.classes, maxTokens: tt.maxTokens}
			m.perClass = make([]classSeen, max(1, len(tt.classes)))
			lim := limiter.Limits{Slots: tt.slots, WaitingLimit: tt.waitingLimit, QueueLen: tt.queueLen,
				PrefillTokenLimit: tt.prefillTokens, QueueTokenLimit: tt.queueTokens}
			m.setBounds(lim, limiter.Stats{})
			m.run(seed, 64, ops, tt.change, lim)
		})
	}
}

// change is what the model's changer alters while requests run.
type change uint8

const (
	changeNone   change = iota
	changeSlots         // N, with SetSlots
	changeLimits        // N, W, Q and the token limits, with SetLimits
)

type model struct {
	t         *testing.T
	l         *limiter.Limiter
	unlimited bool
	lifo      bool
	classes   []limiter.Class
	maxTokens int64

	// holders is the observed number of holders: incremented after Acquire
	// returns a slot, decremented before release, so at every instant it is
	// at most the limiter's real Holding. prefill is the same for the
	// holders before their first token: decremented before the first
	// FirstToken, or before Release when that comes first, so at most the
	// real Prefilling.
	holders, prefill atomic.Int64
	// prefillTokens are the tokens of the observed holders before their
	// first token, counted like prefill.
	prefillTokens atomic.Int64
	// nBound, wBound and qBound are what the real Holding, Prefilling and
	// Waiting may reach: after a change to N, holding is at most max(N,
	// holding at that moment), because the limiter only adds a holder
	// while holding < N; the same for W and prefilling, and for Q and the
	// waiters. boundMu makes a holder's increments and checks, and the
	// sampler's read, atomic with respect to bound changes.
	boundMu                sync.RWMutex
	nBound, wBound, qBound atomic.Int64
	// pBound and qtBound are the same for the tokens in prefill and the
	// queued tokens: max(limit, tokens then), math.MaxInt64 when unset.
	pBound, qtBound atomic.Int64
	// grown is set once a TokenCount was raised while its request
	// waited, which may take the queued tokens beyond qtBound.
	grown               atomic.Bool
	maxSeen, maxPrefill atomic.Int64
	// Release calls (first calls only) started and finished, and the same
	// for the calls that free a waiting place, so that the changer can
	// tell how many of each certainly ran between two of its Stats reads.
	relStarted, relFinished atomic.Int64
	wfStarted, wfFinished   atomic.Int64

	// What callers saw.
	direct, queuedOK, rejected, rejectedTokens, timedOut, cancelledQueued, endedBefore atomic.Uint64
	onQueuedCalls                                                                      atomic.Uint64
	badClass                                                                           atomic.Uint64
	dropped                                                                            atomic.Uint64 // reserved, then released unasked
	perClass                                                                           []classSeen

	failed atomic.Bool
}

// classSeen is what callers of one class saw.
type classSeen struct {
	queuedOK, rejected, rejectedTokens, timedOut, cancelledQueued atomic.Uint64
}

func (m *model) fail(format string, args ...any) {
	if m.failed.CompareAndSwap(false, true) {
		m.t.Errorf(format, args...)
	}
}

// setBounds sets the bounds for limits lim that were set when the limiter
// held s. The caller holds boundMu, or nothing runs yet.
func (m *model) setBounds(lim limiter.Limits, s limiter.Stats) {
	if m.unlimited {
		m.nBound.Store(math.MaxInt64)
		m.wBound.Store(math.MaxInt64)
		m.qBound.Store(0)
		m.pBound.Store(math.MaxInt64)
		m.qtBound.Store(0)
		return
	}
	tokenBound := func(limit, now int64) int64 {
		if limit == 0 {
			return math.MaxInt64 // not set
		}
		return max(limit, now)
	}
	m.pBound.Store(tokenBound(lim.PrefillTokenLimit, s.PrefillTokens))
	m.qtBound.Store(tokenBound(lim.QueueTokenLimit, s.QueuedTokens))
	bound := func(limit, now int) int64 {
		if limit == 0 {
			return math.MaxInt64 // not set
		}
		return int64(max(limit, now))
	}
	m.nBound.Store(bound(lim.Slots, s.Holding))
	m.wBound.Store(bound(lim.WaitingLimit, s.Prefilling))
	m.qBound.Store(int64(max(lim.QueueLen, s.Waiting)))
}

func (m *model) run(seed uint64, workers, ops int, ch change, lim limiter.Limits) {
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { m.sample(stop) })
	if ch != changeNone {
		bg.Go(func() { m.changeLimits(stop, rand.New(rand.NewPCG(seed, 1)), ch, lim) })
	}

	var wg sync.WaitGroup
	per := ops / workers
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)+2))
		wg.Go(func() {
			for range per {
				if m.failed.Load() {
					return
				}
				m.op(rng, &wg)
				if err := m.l.CheckInvariants(); err != nil {
					m.fail("invariant broken: %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if m.failed.Load() {
		return
	}
	m.reconcile(uint64(per * workers))
}

// op performs one random Acquire, holds the slot for a few yields and
// releases it.
func (m *model) op(rng *rand.Rand, wg *sync.WaitGroup) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	var req limiter.Request
	endedBefore := false
	switch k := rng.IntN(20); {
	case k < 10: // plain
	case k < 11: // context ended before the call
		ctx, cancel = context.WithCancel(ctx)
		cancel()
		endedBefore = true
	case k < 14: // cancelled from another goroutine after a few yields
		ctx, cancel = context.WithCancel(ctx)
		yields := rng.IntN(20)
		wg.Go(func() {
			yield(yields)
			cancel()
		})
	case k < 16: // context deadline
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(100))*time.Microsecond)
	default: // request deadline, possibly already passed
		req.Deadline = time.Now().Add(time.Duration(rng.IntN(120)-20) * time.Microsecond)
	}
	defer cancel()
	// A random class and cost; now and then a class out of range, which
	// must be refused with ErrBadClass before anything else.
	class := rng.IntN(len(m.perClass))
	req.Class, req.Cost = class, rng.IntN(6)-1
	badClass := !m.unlimited && rng.IntN(50) == 0
	if badClass {
		req.Class = len(m.perClass) + rng.IntN(3)
		if rng.IntN(2) == 0 {
			req.Class = -1 - rng.IntN(3)
		}
	}
	seen := &m.perClass[class]
	if m.maxTokens > 0 {
		req.Tokens = rng.Int64N(m.maxTokens+3) - 2
		if rng.IntN(8) == 0 { // a count that grows while it waits
			req.TokenCount = m.growingCount(rng, req.Tokens, wg)
		}
	}
	if !badClass && rng.IntN(8) == 0 && !m.reserveFirst(rng, &req, seen) {
		return
	}
	queued := 0
	req.OnQueued = func() {
		queued++
		m.onQueuedCalls.Add(1)
	}

	permit, err := m.l.AcquireRequest(ctx, req)

	if queued > 1 {
		m.fail("OnQueued called %d times for one request", queued)
	}
	if (permit != nil) != (err == nil) {
		m.fail("Acquire returned permit %v with error %v", permit, err)
	}
	if badClass {
		if !errors.Is(err, limiter.ErrBadClass) || permit != nil || queued != 0 {
			m.fail("class %d of %d: err %v, OnQueued calls %d; want ErrBadClass at once", req.Class, len(m.perClass), err, queued)
		}
		m.badClass.Add(1)
		return
	}
	if endedBefore && (err != ctx.Err() || queued != 0) {
		m.fail("context ended before Acquire: err %v, OnQueued calls %d; want ctx.Err() at once", err, queued)
	}
	switch {
	case err == nil:
		if queued == 1 {
			m.queuedOK.Add(1)
			seen.queuedOK.Add(1)
		} else {
			m.direct.Add(1)
		}
		m.hold(rng, permit)
	case errors.Is(err, limiter.ErrQueueFull):
		if queued != 0 {
			m.fail("ErrQueueFull after OnQueued")
		}
		if m.unlimited {
			m.fail("unlimited limiter refused a request")
		}
		m.rejected.Add(1)
		seen.rejected.Add(1)
	case errors.Is(err, limiter.ErrQueueTokens):
		if queued != 0 || m.unlimited {
			m.fail("ErrQueueTokens after OnQueued (%d) or from an unlimited limiter (%t)", queued, m.unlimited)
		}
		m.rejectedTokens.Add(1)
		seen.rejectedTokens.Add(1)
	case errors.Is(err, limiter.ErrQueueTimeout):
		if queued != 1 {
			m.fail("ErrQueueTimeout without being queued")
		}
		m.timedOut.Add(1)
		seen.timedOut.Add(1)
	case err == ctx.Err():
		if queued == 1 {
			m.cancelledQueued.Add(1)
			seen.cancelledQueued.Add(1)
		} else {
			m.endedBefore.Add(1)
		}
	default:
		m.fail("Acquire: unexpected error %v (ctx.Err() = %v)", err, ctx.Err())
	}
}

// reserveFirst has the request hold its queue place before it asks
// (TryReserve), as slotgate's front end has it on its way to be parked:
// after a few yields it asks with the place (req.Held), or drops it. It
// reports whether the request goes on to AcquireRequest; one admitted or
// refused at once, or dropped, is done.
func (m *model) reserveFirst(rng *rand.Rand, req *limiter.Request, seen *classSeen) bool {
	p, r, err := m.l.TryReserve(*req)
	switch {
	case p != nil:
		m.direct.Add(1)
		m.hold(rng, p)
		return false
	case errors.Is(err, limiter.ErrQueueFull):
		m.rejected.Add(1)
		seen.rejected.Add(1)
		return false
	case errors.Is(err, limiter.ErrQueueTokens):
		m.rejectedTokens.Add(1)
		seen.rejectedTokens.Add(1)
		return false
	case err != nil || r == nil:
		m.fail("TryReserve = %v, %v, %v", p, r, err)
		return false
	}
	yield(rng.IntN(10))
	if rng.IntN(4) == 0 {
		r.Release() // dropped: the client left on its way
		m.dropped.Add(1)
		return false
	}
	req.Held = r
	return true
}

// hold checks the caps against the observed holders, holds the slot for a
// few yields and gives it back, with the first token reported in one of
// the ways a proxy may report it.
func (m *model) hold(rng *rand.Rand, p *limiter.Permit) {
	tokens := p.Tokens()
	m.boundMu.RLock()
	h, pf, pt := m.holders.Add(1), m.prefill.Add(1), m.prefillTokens.Add(tokens)
	nb, wb, pb := m.nBound.Load(), m.wBound.Load(), m.pBound.Load()
	m.boundMu.RUnlock()
	if h > nb {
		m.fail("%d holders observed, more than N allows (%d)", h, nb)
	}
	if pf > wb {
		m.fail("%d holders before their first token observed, more than W allows (%d)", pf, wb)
	}
	// Beyond P only a request larger than P, alone: it was admitted with
	// no tokens in prefill, and none fit beside it. A request of no tokens
	// adds nothing and may be admitted beside it, or above a lowered P; a
	// holder of tokens that went beyond P is caught by its own check (the
	// last of two such holders to count itself sees both).
	if tokens > 0 && pt > pb && pt != tokens {
		m.fail("%d tokens in prefill observed, more than P allows (%d), with %d of them this request's", pt, pb, tokens)
	}
	if tokens < 0 || tokens > m.maxTokens {
		m.fail("permit holds %d tokens, requests have at most %d", tokens, m.maxTokens)
	}
	raise(&m.maxSeen, h)
	raise(&m.maxPrefill, pf)
	yield(rng.IntN(20))

	// unprefill uncounts the request from the observed ones before their
	// first token, before the limiter does.
	unprefill := func() {
		m.prefill.Add(-1)
		m.prefillTokens.Add(-tokens)
	}

	// firstToken frees the waiting place, counted as a free.
	firstToken := func() {
		unprefill()
		m.wfStarted.Add(1)
		p.FirstToken()
		m.wfFinished.Add(1)
	}
	switch rng.IntN(6) {
	case 0: // no first token: Release frees both
		unprefill()
		m.holders.Add(-1)
		m.wfStarted.Add(1)
		m.release(p)
		m.wfFinished.Add(1)
	case 1: // first token, then Release
		firstToken()
		yield(rng.IntN(20))
		m.holders.Add(-1)
		m.release(p)
	case 2: // the first token reported twice, the second call a no-op
		firstToken()
		p.FirstToken()
		yield(rng.IntN(20))
		m.holders.Add(-1)
		m.release(p)
		p.FirstToken()
	case 3: // first token and Release at once, from two goroutines
		unprefill()
		m.holders.Add(-1)
		m.wfStarted.Add(1)
		var ft sync.WaitGroup
		ft.Go(p.FirstToken)
		m.release(p)
		ft.Wait()
		m.wfFinished.Add(1)
	case 4: // the first token reported twice at once
		unprefill()
		m.wfStarted.Add(1)
		var ft sync.WaitGroup
		ft.Go(p.FirstToken)
		p.FirstToken()
		ft.Wait()
		m.wfFinished.Add(1)
		yield(rng.IntN(20))
		m.holders.Add(-1)
		m.release(p)
	default: // the first token reported after Release: a no-op
		unprefill()
		m.holders.Add(-1)
		m.wfStarted.Add(1)
		m.release(p)
		m.wfFinished.Add(1)
		p.FirstToken()
	}
	if rng.IntN(8) == 0 {
		p.Release() // a second call must do nothing
	}
}

// growingCount returns a TokenCount starting at tokens that a goroutine
// of wg raises a few times, after a few yields each, up to m.maxTokens:
// while the request waits, after its grant, or before it arrives.
func (m *model) growingCount(rng *rand.Rand, tokens int64, wg *sync.WaitGroup) *limiter.TokenCount {
	c := new(limiter.TokenCount)
	c.Raise(tokens)
	steps := make([]int64, 1+rng.IntN(3))
	for i := range steps {
		steps[i] = rng.Int64N(m.maxTokens + 1)
	}
	yields := rng.IntN(20)
	wg.Go(func() {
		for _, n := range steps {
			yield(yields)
			m.grown.Store(true)
			c.Raise(n)
		}
	})
	return c
}

// release is the first Release of a permit, counted.
func (m *model) release(p *limiter.Permit) {
	m.relStarted.Add(1)
	p.Release()
	m.relFinished.Add(1)
}

// raise makes v at least x.
func raise(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// changeLimits changes the limits at random until stop: N alone with
// SetSlots (changeSlots), or N, W and Q with SetLimits (changeLimits),
// each limit now and then unset; and, with SetLimits, now and then
// invalid limits, which must be refused and change nothing.
//
// Between two changes it also checks that lowering is honoured: once N
// was set to n and Holding was h0, holding can grow only while below n,
// and while above n every release lowers it by one instead of being
// handed on. So at a later read, Holding <= max(n, h0-k), where k is a
// lower bound on the releases that ran in between: those finished before
// the later read minus those started before the earlier one. The same
// holds for W, Prefilling and the waiting places freed.
func (m *model) changeLimits(stop <-chan struct{}, rng *rand.Rand, ch change, initial limiter.Limits) {
	cur := initial
	nMax := 2 * max(initial.Slots, initial.WaitingLimit, 2)
	wMax := 2 * max(initial.WaitingLimit, 2)
	qMax := 2 * max(initial.QueueLen, 2)
	pMax := 2 * max(initial.PrefillTokenLimit, m.maxTokens, 2)
	qtMax := 2 * max(initial.QueueTokenLimit, m.maxTokens, 2)
	h0, p0 := 0, 0
	s0, ws0 := int64(0), int64(0)
	for {
		select {
		case <-stop:
			return
		default:
		}
		yield(rng.IntN(200))
		f1, wf1 := m.relFinished.Load(), m.wfFinished.Load()
		s := m.l.Stats()
		if cur.Slots > 0 && int64(s.Holding) > max(int64(cur.Slots), int64(h0)-(f1-s0)) {
			m.fail("after N = %d with %d holders and at least %d releases since, Holding is %d: releases above the limit were handed on",
				cur.Slots, h0, f1-s0, s.Holding)
		}
		if cur.WaitingLimit > 0 && int64(s.Prefilling) > max(int64(cur.WaitingLimit), int64(p0)-(wf1-ws0)) {
			m.fail("after W = %d with %d prefilling and at least %d waiting places freed since, Prefilling is %d: places freed above the limit were handed on",
				cur.WaitingLimit, p0, wf1-ws0, s.Prefilling)
		}

		next := cur
		if ch == changeSlots {
			next.Slots = 1 + rng.IntN(nMax)
		} else {
			if rng.IntN(10) == 0 {
				m.refuseInvalid(rng, cur)
				continue
			}
			next = limiter.Limits{
				Slots:        randomLimit(rng, nMax),
				WaitingLimit: randomLimit(rng, wMax),
				QueueLen:     rng.IntN(qMax + 1),
				// Token limits unset one time in four, as N and W.
				PrefillTokenLimit: randomTokenLimit(rng, pMax),
				QueueTokenLimit:   randomTokenLimit(rng, qtMax),
			}
			if next.Slots == 0 && next.WaitingLimit == 0 {
				next.Slots = 1 + rng.IntN(nMax)
			}
		}
		m.boundMu.Lock()
		var err error
		if ch == changeSlots {
			err = m.l.SetSlots(next.Slots)
		} else {
			err = m.l.SetLimits(next)
		}
		if err != nil {
			m.fail("setting %+v: %v", next, err)
		}
		// From this read on, holding stays within max(n, h0): it can grow
		// only while below n; the same for prefilling and the waiters.
		s = m.l.Stats()
		m.setBounds(next, s)
		h0, p0 = s.Holding, s.Prefilling
		s0, ws0 = m.relStarted.Load(), m.wfStarted.Load()
		m.boundMu.Unlock()
		if got := m.l.Limits(); got != next {
			m.fail("Limits() = %+v after setting %+v", got, next)
		}
		cur = next
	}
}

// randomLimit is an engine limit in [1, n], or 0 (not set) one time in
// four.
func randomLimit(rng *rand.Rand, n int) int {
	if rng.IntN(4) == 0 {
		return 0
	}
	return 1 + rng.IntN(n)
}

// randomTokenLimit is a token limit in [1, n], or 0 (not set) one time in
// four.
func randomTokenLimit(rng *rand.Rand, n int64) int64 {
	if rng.IntN(4) == 0 {
		return 0
	}
	return 1 + rng.Int64N(n)
}

// refuseInvalid calls SetLimits with invalid limits, which must fail,
// naming the bad one, and leave the limits as they were.
func (m *model) refuseInvalid(rng *rand.Rand, cur limiter.Limits) {
	bad, want := cur, ""
	switch rng.IntN(6) {
	case 0:
		bad.Slots, bad.WaitingLimit, want = 0, 0, "slots must be at least 1"
	case 4:
		bad.PrefillTokenLimit, want = -1-rng.Int64N(3), "prefill token limit must not be negative"
	case 5:
		bad.QueueTokenLimit, want = -1-rng.Int64N(3), "queue token limit must not be negative"
	case 1:
		bad.Slots, want = -1-rng.IntN(3), "slots must be at least 1"
	case 2:
		bad.WaitingLimit, want = -1-rng.IntN(3), "waiting limit must not be negative"
	default:
		bad.QueueLen, want = -1-rng.IntN(3), "queue length must not be negative"
	}
	if err := m.l.SetLimits(bad); err == nil || !strings.Contains(err.Error(), want) {
		m.fail("SetLimits(%+v) = %v, want an error containing %q", bad, err, want)
	}
	if got := m.l.Limits(); got != cur {
		m.fail("refused SetLimits(%+v) changed the limits from %+v to %+v", bad, cur, got)
	}
}

// sample checks Stats snapshots in a loop until stop.
func (m *model) sample(stop <-chan struct{}) {
	var prev limiter.Stats
	for {
		select {
		case <-stop:
			return
		default:
		}
		m.boundMu.RLock()
		s := m.l.Stats()
		qb, pb, qtb := m.qBound.Load(), m.pBound.Load(), m.qtBound.Load()
		m.boundMu.RUnlock()
		m.checkTokens(s, pb, qtb)
		if s.Holding < 0 || s.Waiting < 0 || s.Prefilling < 0 {
			m.fail("negative gauge: %+v", s)
		}
		if s.Prefilling > s.Holding {
			m.fail("Prefilling %d > Holding %d", s.Prefilling, s.Holding)
		}
		if int64(s.Waiting) > qb {
			m.fail("Waiting %d beyond the queue bound %d (QueueLen %d)", s.Waiting, qb, s.QueueLen)
		}
		if s.Unlimited {
			if s.Slots != 0 || s.WaitingLimit != 0 || s.QueueLen != 0 || s.Waiting != 0 {
				m.fail("unlimited limiter: %+v", s)
			}
		} else if under(s.Holding, s.Slots) && under(s.Prefilling, s.WaitingLimit) && s.Waiting != 0 &&
			(s.PrefillTokenLimit == 0 || s.PrefillTokens == 0) {
			m.fail("Holding %d of N %d, Prefilling %d of W %d, %d tokens in prefill of P %d, with Waiting %d: free room is not used",
				s.Holding, s.Slots, s.Prefilling, s.WaitingLimit, s.PrefillTokens, s.PrefillTokenLimit, s.Waiting)
		}
		if s.AdmittedDirect < prev.AdmittedDirect || s.AdmittedQueued < prev.AdmittedQueued ||
			s.RejectedFull < prev.RejectedFull || s.TimedOut < prev.TimedOut || s.CancelledWaiting < prev.CancelledWaiting ||
			s.DequeuedLIFO < prev.DequeuedLIFO || s.AdmittedQueued-s.DequeuedLIFO < prev.AdmittedQueued-prev.DequeuedLIFO {
			m.fail("counters went back: %+v then %+v", prev, s)
		}
		if s.DequeuedLIFO > s.AdmittedQueued || (!m.lifo && s.DequeuedLIFO != 0) {
			m.fail("DequeuedLIFO %d, AdmittedQueued %d, adaptive LIFO %t", s.DequeuedLIFO, s.AdmittedQueued, m.lifo)
		}
		m.checkClasses(s)
		prev = s
		runtime.Gosched()
	}
}

// checkTokens checks a snapshot's tokens against the bounds pb (prefill)
// and qtb (queued) read with it: tokens only with requests; beyond pb
// only what one request may hold; queued tokens beyond qtb only for a
// single waiter, which may enter an empty queue whatever its size, or
// after a TokenCount grew.
func (m *model) checkTokens(s limiter.Stats, pb, qtb int64) {
	if s.PrefillTokens < 0 || s.QueuedTokens < 0 || (s.Prefilling == 0 && s.PrefillTokens != 0) ||
		(s.Waiting == 0 && s.QueuedTokens != 0) {
		m.fail("tokens: %d in prefill of %d requests, %d queued of %d waiters", s.PrefillTokens, s.Prefilling, s.QueuedTokens, s.Waiting)
	}
	if s.PrefillTokens > pb && s.PrefillTokens > m.maxTokens {
		m.fail("%d tokens in prefill, beyond the bound %d and the largest request %d", s.PrefillTokens, pb, m.maxTokens)
	}
	if s.QueuedTokens > qtb && s.Waiting != 1 && !m.grown.Load() {
		m.fail("%d tokens queued by %d waiters, beyond the bound %d", s.QueuedTokens, s.Waiting, qtb)
	}
	var sum int64
	for _, c := range s.Classes {
		sum += c.QueuedTokens
	}
	if s.Classes != nil && sum != s.QueuedTokens {
		m.fail("classes hold %d queued tokens, QueuedTokens %d", sum, s.QueuedTokens)
	}
}

// under reports whether n is below limit, a limit of 0 being no limit.
func under(n, limit int) bool { return limit == 0 || n < limit }

// checkClasses checks a snapshot's per-class part: one entry per class
// (none for an unlimited limiter), each within its Limit, adding up to the
// total Waiting, with no more LIFO grants than grants.
func (m *model) checkClasses(s limiter.Stats) {
	if m.unlimited {
		if s.Classes != nil {
			m.fail("unlimited limiter reports classes %+v", s.Classes)
		}
		return
	}
	if len(s.Classes) != len(m.perClass) {
		m.fail("%d class entries, want %d", len(s.Classes), len(m.perClass))
		return
	}
	sum := 0
	for i, c := range s.Classes {
		sum += c.Waiting
		if len(m.classes) > 0 && (c.Name != m.classes[i].Name || (m.classes[i].Limit > 0 && c.Waiting > m.classes[i].Limit)) {
			m.fail("class %d: %+v beyond %+v", i, c, m.classes[i])
		}
		if c.DequeuedLIFO > c.AdmittedQueued {
			m.fail("class %d: DequeuedLIFO %d > AdmittedQueued %d", i, c.DequeuedLIFO, c.AdmittedQueued)
		}
	}
	if sum != s.Waiting {
		m.fail("classes hold %d waiters, Waiting %d", sum, s.Waiting)
	}
}

func (m *model) reconcile(total uint64) {
	t, l := m.t, m.l
	s := l.Stats()
	check := func(name string, got, want uint64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: Stats says %d, callers saw %d", name, got, want)
		}
	}
	check("AdmittedDirect", s.AdmittedDirect, m.direct.Load())
	check("AdmittedQueued", s.AdmittedQueued, m.queuedOK.Load())
	check("RejectedFull", s.RejectedFull, m.rejected.Load())
	check("RejectedTokens", s.RejectedTokens, m.rejectedTokens.Load())
	check("TimedOut", s.TimedOut, m.timedOut.Load())
	check("CancelledWaiting", s.CancelledWaiting, m.cancelledQueued.Load())
	check("OnQueued calls", m.onQueuedCalls.Load(), m.queuedOK.Load()+m.timedOut.Load()+m.cancelledQueued.Load())
	seen := m.direct.Load() + m.queuedOK.Load() + m.rejected.Load() + m.rejectedTokens.Load() + m.timedOut.Load() + m.cancelledQueued.Load() + m.endedBefore.Load() + m.badClass.Load() + m.dropped.Load()
	check("operations", seen, total)
	// Each LIFO grant consumes the flag a queue timeout set, and the
	// waiter it went to took the slot.
	if s.DequeuedLIFO > s.TimedOut || s.DequeuedLIFO > s.AdmittedQueued || (!m.lifo && s.DequeuedLIFO != 0) {
		t.Errorf("DequeuedLIFO %d with TimedOut %d, AdmittedQueued %d, adaptive LIFO %t", s.DequeuedLIFO, s.TimedOut, s.AdmittedQueued, m.lifo)
	}
	m.checkClasses(s)
	var lifo uint64
	for i := range s.Classes {
		c, p := s.Classes[i], &m.perClass[i]
		check(fmt.Sprintf("class %d AdmittedQueued", i), c.AdmittedQueued, p.queuedOK.Load())
		check(fmt.Sprintf("class %d RejectedFull", i), c.RejectedFull, p.rejected.Load())
		check(fmt.Sprintf("class %d RejectedTokens", i), c.RejectedTokens, p.rejectedTokens.Load())
		check(fmt.Sprintf("class %d TimedOut", i), c.TimedOut, p.timedOut.Load())
		check(fmt.Sprintf("class %d CancelledWaiting", i), c.CancelledWaiting, p.cancelledQueued.Load())
		lifo += c.DequeuedLIFO
	}
	if s.Classes != nil {
		check("DequeuedLIFO, sum of classes", lifo, s.DequeuedLIFO)
	}
	if s.Holding != 0 || s.Prefilling != 0 || s.Waiting != 0 || m.holders.Load() != 0 || m.prefill.Load() != 0 ||
		s.PrefillTokens != 0 || s.QueuedTokens != 0 || m.prefillTokens.Load() != 0 {
		t.Errorf("at the end: Holding %d Prefilling %d Waiting %d, tokens %d in prefill %d queued, observed holders %d prefilling %d of %d tokens",
			s.Holding, s.Prefilling, s.Waiting, s.PrefillTokens, s.QueuedTokens, m.holders.Load(), m.prefill.Load(), m.prefillTokens.Load())
	}
	if err := l.CheckInvariants(); err != nil {
		t.Errorf("at the end: %v", err)
	}
	if n := l.Reserved(); n != 0 {
		t.Errorf("at the end: %d queue places still held", n)
	}
	p, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("fresh Acquire at the end: %v", err)
	}
	p.FirstToken()
	if got := l.Stats(); got.AdmittedDirect != s.AdmittedDirect+1 || got.Holding != 1 || got.Prefilling != 0 {
		t.Errorf("fresh Acquire and FirstToken at the end: %+v, want a direct admission holding no waiting place", got)
	}
	p.Release()
	if got := l.Stats(); got.Holding != 0 || got.Prefilling != 0 {
		t.Errorf("after the fresh Release: Holding %d Prefilling %d", got.Holding, got.Prefilling)
	}
	t.Logf("limits %+v; direct %d queued %d (LIFO %d) rejected %d (tokens %d) timed out %d cancelled waiting %d ended before %d bad class %d; max holders %d, before first token %d; classes %+v",
		l.Limits(), s.AdmittedDirect, s.AdmittedQueued, s.DequeuedLIFO, s.RejectedFull, s.RejectedTokens, s.TimedOut, s.CancelledWaiting,
		m.endedBefore.Load(), m.badClass.Load(), m.maxSeen.Load(), m.maxPrefill.Load(), s.Classes)
}

func yield(n int) {
	for range n {
		runtime.Gosched()
	}
}
