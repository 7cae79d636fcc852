package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// TestModel drives a limiter with many goroutines doing random Acquire
// calls (plain, cancelled before or while waiting, with a context timeout
// or a request deadline, released once or twice) while SetSlots changes the
// limit at random, and checks:
//
//   - the cap: the observed number of holders never exceeds the bound that
//     the slot changes allow (checked on every increment);
//   - from a Stats sampler: Waiting <= QueueLen, Holding < Slots implies an
//     empty queue (Stats reads those under the lock), counters monotonic;
//   - after every operation, the internal invariants under the lock
//     (CheckInvariants, export_test.go), which is what makes "no false
//     ErrQueueFull" checkable: AcquireRequest refuses only when its direct
//     branch is not taken (holding >= slots or waiting > 0) and waiting >=
//     QueueLen; with holding < slots implying waiting == 0 and waiting never
//     above QueueLen, a refusal means every slot was held or someone waited,
//     and the queue was full;
//   - per call: OnQueued at most once, and only for outcomes that queue;
//   - at the end, the counters reconcile exactly with what callers saw,
//     Holding == 0, Waiting == 0, and a fresh Acquire is admitted directly.
//
// Holding times are goroutine yields, not sleeps.
func TestModel(t *testing.T) {
	ops := 4000
	if testing.Short() {
		ops = 600
	}
	tests := []struct {
		name         string
		slots        int
		queueLen     int
		queueTimeout time.Duration
		setSlots     bool
		unlimited    bool
		classes      []limiter.Class
	}{
		{name: "N=1 Q=0", slots: 1},
		{name: "N=1 Q=8", slots: 1, queueLen: 8},
		{name: "N=4 Q=16 timeout", slots: 4, queueLen: 16, queueTimeout: 50 * time.Microsecond},
		{name: "N=8 Q=64 set slots", slots: 8, queueLen: 64, setSlots: true},
		{name: "N=16 Q=4 set slots timeout", slots: 16, queueLen: 4, queueTimeout: 20 * time.Microsecond, setSlots: true},
		{name: "N=2 Q=128 set slots", slots: 2, queueLen: 128, setSlots: true},
		{name: "N=32 Q=32 set slots", slots: 32, queueLen: 32, setSlots: true},
		{name: "unlimited", unlimited: true},
		{name: "classes N=1 Q=8", slots: 1, queueLen: 8, classes: []limiter.Class{
			{Name: "a", Quantum: 3}, {Name: "b", Quantum: 1, Limit: 2}}},
		{name: "classes N=4 Q=32 set slots timeout", slots: 4, queueLen: 32, queueTimeout: 50 * time.Microsecond, setSlots: true,
			classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: 20}, {Name: "b", Quantum: 2}, {Name: "c", Quantum: 7, Limit: 3}}},
		{name: "classes N=8 Q=16 set slots", slots: 8, queueLen: 16, setSlots: true, classes: []limiter.Class{
			{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}, {Name: "c", Quantum: 2}, {Name: "d", Quantum: 5, Limit: 1}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano()) + uint64(i)
			t.Logf("seed %d", seed)
			var l *limiter.Limiter
			if tt.unlimited {
				l = limiter.NewUnlimited()
			} else {
				l = newLimiter(t, limiter.Options{Slots: tt.slots, QueueLen: tt.queueLen, QueueTimeout: tt.queueTimeout, Classes: tt.classes})
			}
			m := &model{t: t, l: l, unlimited: tt.unlimited, classes: tt.classes}
			m.perClass = make([]classSeen, max(1, len(tt.classes)))
			if tt.unlimited {
				m.bound.Store(math.MaxInt64)
			} else {
				m.bound.Store(int64(tt.slots))
			}
			m.run(seed, 64, ops, tt.setSlots, tt.slots)
		})
	}
}

type model struct {
	t         *testing.T
	l         *limiter.Limiter
	unlimited bool
	classes   []limiter.Class

	// holders is the observed number of holders: incremented after Acquire
	// returns a slot, decremented before release, so at every instant it is
	// at most the limiter's real Holding.
	holders atomic.Int64
	// bound is what the real Holding may reach: after SetSlots(n), holding
	// is at most max(n, holding at that moment), because the limiter only
	// adds a holder while holding < slots. boundMu makes a holder's
	// increment and check atomic with respect to bound changes.
	boundMu sync.RWMutex
	bound   atomic.Int64
	maxSeen atomic.Int64
	// Release calls (first calls only) started and finished, so that the
	// slot changer can tell how many releases certainly ran between two of
	// its Stats reads.
	relStarted, relFinished atomic.Int64

	// What callers saw.
	direct, queuedOK, rejected, timedOut, cancelledQueued, endedBefore atomic.Uint64
	onQueuedCalls                                                      atomic.Uint64
	badClass                                                           atomic.Uint64
	perClass                                                           []classSeen

	failed atomic.Bool
}

// classSeen is what callers of one class saw.
type classSeen struct {
	queuedOK, rejected, timedOut, cancelledQueued atomic.Uint64
}

func (m *model) fail(format string, args ...any) {
	if m.failed.CompareAndSwap(false, true) {
		m.t.Errorf(format, args...)
	}
}

func (m *model) run(seed uint64, workers, ops int, setSlots bool, slots int) {
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { m.sample(stop) })
	if setSlots {
		bg.Go(func() { m.changeSlots(stop, rand.New(rand.NewPCG(seed, 1)), slots) })
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
	queued := 0
	req.OnQueued = func() {
		queued++
		m.onQueuedCalls.Add(1)
	}

	release, err := m.l.AcquireRequest(ctx, req)

	if queued > 1 {
		m.fail("OnQueued called %d times for one request", queued)
	}
	if badClass {
		if !errors.Is(err, limiter.ErrBadClass) || release != nil || queued != 0 {
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
		m.hold(rng, release)
	case errors.Is(err, limiter.ErrQueueFull):
		if queued != 0 {
			m.fail("ErrQueueFull after OnQueued")
		}
		if m.unlimited {
			m.fail("unlimited limiter refused a request")
		}
		m.rejected.Add(1)
		seen.rejected.Add(1)
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

func (m *model) hold(rng *rand.Rand, release func()) {
	m.boundMu.RLock()
	h := m.holders.Add(1)
	b := m.bound.Load()
	m.boundMu.RUnlock()
	if h > b {
		m.fail("%d holders observed, more than the limit allows (%d)", h, b)
	}
	for {
		old := m.maxSeen.Load()
		if h <= old || m.maxSeen.CompareAndSwap(old, h) {
			break
		}
	}
	yield(rng.IntN(40))
	m.holders.Add(-1)
	m.relStarted.Add(1)
	release()
	m.relFinished.Add(1)
	if rng.IntN(8) == 0 {
		release() // a second call must do nothing
	}
}

// changeSlots calls SetSlots with random values in [1, 2*slots] until stop.
//
// Between two changes it also checks that lowering is honoured: once
// SetSlots(n) has run and Holding was h0, holding can grow only while below
// n, and while above n every release lowers it by one instead of being
// handed on. So at a later read, Holding <= max(n, h0-k), where k is a lower
// bound on the releases that ran in between: those finished before the
// later read minus those started before the earlier one.
func (m *model) changeSlots(stop <-chan struct{}, rng *rand.Rand, slots int) {
	n, h0, s0 := slots, 0, int64(0)
	for {
		select {
		case <-stop:
			return
		default:
		}
		yield(rng.IntN(200))
		f1 := m.relFinished.Load()
		if h1 := m.l.Stats().Holding; int64(h1) > max(int64(n), int64(h0)-(f1-s0)) {
			m.fail("after SetSlots(%d) with %d holders and at least %d releases since, Holding is %d: releases above the limit were handed on",
				n, h0, f1-s0, h1)
		}
		n = 1 + rng.IntN(2*slots)
		m.boundMu.Lock()
		if err := m.l.SetSlots(n); err != nil {
			m.fail("SetSlots(%d): %v", n, err)
		}
		// From this read on, holding stays within max(n, h0): it can grow
		// only while below n.
		h0 = m.l.Stats().Holding
		s0 = m.relStarted.Load()
		m.bound.Store(int64(max(n, h0)))
		m.boundMu.Unlock()
	}
}

// sample checks Stats snapshots in a loop until stop.
func (m *model) sample(stop <-chan struct{}) {
	var prev limiter.Stats
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		s := m.l.Stats()
		if s.Holding < 0 || s.Waiting < 0 {
			m.fail("negative gauge: %+v", s)
		}
		if s.Waiting > s.QueueLen {
			m.fail("Waiting %d > QueueLen %d", s.Waiting, s.QueueLen)
		}
		if s.Unlimited {
			if s.Slots != 0 || s.Waiting != 0 {
				m.fail("unlimited limiter: %+v", s)
			}
		} else if s.Holding < s.Slots && s.Waiting != 0 {
			m.fail("Holding %d < Slots %d with Waiting %d: a free slot is not used", s.Holding, s.Slots, s.Waiting)
		}
		if s.AdmittedDirect < prev.AdmittedDirect || s.AdmittedQueued < prev.AdmittedQueued ||
			s.RejectedFull < prev.RejectedFull || s.TimedOut < prev.TimedOut || s.CancelledWaiting < prev.CancelledWaiting {
			m.fail("counters went back: %+v then %+v", prev, s)
		}
		m.checkClasses(s)
		prev = s
		runtime.Gosched()
	}
}

// checkClasses checks a snapshot's per-class part: one entry per class
// (none for an unlimited limiter), each within its Limit, adding up to the
// total Waiting.
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
	check("TimedOut", s.TimedOut, m.timedOut.Load())
	check("CancelledWaiting", s.CancelledWaiting, m.cancelledQueued.Load())
	check("OnQueued calls", m.onQueuedCalls.Load(), m.queuedOK.Load()+m.timedOut.Load()+m.cancelledQueued.Load())
	seen := m.direct.Load() + m.queuedOK.Load() + m.rejected.Load() + m.timedOut.Load() + m.cancelledQueued.Load() + m.endedBefore.Load() + m.badClass.Load()
	check("operations", seen, total)
	m.checkClasses(s)
	for i := range s.Classes {
		c, p := s.Classes[i], &m.perClass[i]
		check(fmt.Sprintf("class %d AdmittedQueued", i), c.AdmittedQueued, p.queuedOK.Load())
		check(fmt.Sprintf("class %d RejectedFull", i), c.RejectedFull, p.rejected.Load())
		check(fmt.Sprintf("class %d TimedOut", i), c.TimedOut, p.timedOut.Load())
		check(fmt.Sprintf("class %d CancelledWaiting", i), c.CancelledWaiting, p.cancelledQueued.Load())
	}
	if s.Holding != 0 || s.Waiting != 0 || m.holders.Load() != 0 {
		t.Errorf("at the end: Holding %d Waiting %d observed holders %d", s.Holding, s.Waiting, m.holders.Load())
	}
	if err := l.CheckInvariants(); err != nil {
		t.Errorf("at the end: %v", err)
	}
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("fresh Acquire at the end: %v", err)
	}
	release()
	if got := l.Stats().AdmittedDirect; got != s.AdmittedDirect+1 {
		t.Errorf("fresh Acquire at the end was not a direct admission")
	}
	t.Logf("direct %d queued %d rejected %d timed out %d cancelled waiting %d ended before %d bad class %d; max holders %d; classes %+v",
		s.AdmittedDirect, s.AdmittedQueued, s.RejectedFull, s.TimedOut, s.CancelledWaiting, m.endedBefore.Load(), m.badClass.Load(), m.maxSeen.Load(), s.Classes)
}

func yield(n int) {
	for range n {
		runtime.Gosched()
	}
}
