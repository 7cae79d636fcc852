package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// raceOutcome counts how each iteration of a race ended, for the log.
type raceOutcome struct{ granted, cancelled, timedOut int }

// TestRaceGrantVsEnd races, with real goroutines, the release that grants a
// queued waiter W its slot against W's context being cancelled and/or its
// deadline passing. Whatever the interleaving:
//
//   - W either got the slot (and releases it) or got ctx.Err() or
//     ErrQueueTimeout, as allowed by what ended;
//   - if W did not take the slot, it went on to the next waiter or back to
//     free; if W took it, the next waiter still waits;
//   - the counters account for W exactly once;
//   - at the end Holding == 0, Waiting == 0 and a fresh Acquire is admitted
//     directly.
func TestRaceGrantVsEnd(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 100
	}
	tests := []struct {
		name       string
		cancel     bool // cancel W's context while the slot is released
		expire     bool // W's deadline has passed when it starts waiting
		nextWaiter bool // another waiter is queued behind W
	}{
		{name: "cancel vs grant", cancel: true},
		{name: "cancel vs grant with next waiter", cancel: true, nextWaiter: true},
		{name: "timeout vs grant", expire: true},
		{name: "timeout vs grant with next waiter", expire: true, nextWaiter: true},
		{name: "cancel and timeout vs grant", cancel: true, expire: true},
		{name: "cancel and timeout vs grant with next waiter", cancel: true, expire: true, nextWaiter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen raceOutcome
			for i := range iterations {
				raceGrantVsEnd(t, i, tt.cancel, tt.expire, tt.nextWaiter, &seen)
				if t.Failed() {
					return
				}
			}
			t.Logf("%d iterations: W granted %d, cancelled %d, timed out %d", iterations, seen.granted, seen.cancelled, seen.timedOut)
		})
	}
}

func raceGrantVsEnd(t *testing.T, iter int, cancelW, expire, nextWaiter bool, seen *raceOutcome) {
	t.Helper()
	l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 2})
	holder := acquireDirect(t, l)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deadline time.Time
	if expire {
		deadline = time.Now().Add(-time.Nanosecond)
	}
	wQueued, goRace := make(chan struct{}), make(chan struct{})
	type result struct {
		permit *limiter.Permit
		err    error
	}
	wDone := make(chan result, 1)
	go func() {
		r, err := l.AcquireRequest(ctx, limiter.Request{Deadline: deadline, OnQueued: func() {
			close(wQueued)
			<-goRace // hold W here until the next waiter is queued behind it
		}})
		wDone <- result{r, err}
	}()
	<-wQueued

	var nDone chan result
	if nextWaiter {
		nQueued := make(chan struct{})
		nDone = make(chan result, 1)
		go func() {
			r, err := l.AcquireRequest(context.Background(), limiter.Request{OnQueued: func() { close(nQueued) }})
			nDone <- result{r, err}
		}()
		<-nQueued
	}

	// The race: W starts waiting (and, if expire, its timer fires at once),
	// the holder releases, and W's context is cancelled, all at once.
	var racers sync.WaitGroup
	racers.Go(func() {
		<-goRace
		holder()
	})
	if cancelW {
		racers.Go(func() {
			<-goRace
			cancel()
		})
	}
	close(goRace)
	w := <-wDone
	racers.Wait()

	s := l.Stats()
	switch {
	case w.err == nil:
		seen.granted++
		// W holds the only slot; the next waiter, if any, still waits.
		if s.Holding != 1 || s.Waiting != btoi(nextWaiter) {
			t.Fatalf("iteration %d: W granted, Holding %d Waiting %d, want 1 %d", iter, s.Holding, s.Waiting, btoi(nextWaiter))
		}
		if s.AdmittedQueued != 1 || s.CancelledWaiting != 0 || s.TimedOut != 0 {
			t.Fatalf("iteration %d: W granted, counters %+v", iter, s)
		}
		w.permit.Release()
		w.permit.Release()
	case errors.Is(w.err, context.Canceled) && cancelW,
		errors.Is(w.err, limiter.ErrQueueTimeout) && expire:
		if errors.Is(w.err, context.Canceled) {
			seen.cancelled++
		} else {
			seen.timedOut++
		}
		if w.permit != nil {
			t.Fatalf("iteration %d: release not nil with %v", iter, w.err)
		}
		// The slot went on to the next waiter, or back to free.
		if s.Holding != btoi(nextWaiter) || s.Waiting != 0 {
			t.Fatalf("iteration %d: W left with %v, Holding %d Waiting %d, want %d 0", iter, w.err, s.Holding, s.Waiting, btoi(nextWaiter))
		}
		wantCancelled, wantTimedOut := btoi(errors.Is(w.err, context.Canceled)), btoi(errors.Is(w.err, limiter.ErrQueueTimeout))
		if s.CancelledWaiting != uint64(wantCancelled) || s.TimedOut != uint64(wantTimedOut) {
			t.Fatalf("iteration %d: W left with %v, counters %+v", iter, w.err, s)
		}
	default:
		t.Fatalf("iteration %d: W got %v (cancelled %t, expired %t)", iter, w.err, cancelW, expire)
	}

	if nextWaiter {
		n := <-nDone
		if n.err != nil {
			t.Fatalf("iteration %d: next waiter: %v", iter, n.err)
		}
		n.permit.Release()
	}
	s = l.Stats()
	if s.Holding != 0 || s.Waiting != 0 {
		t.Fatalf("iteration %d: at the end Holding %d Waiting %d", iter, s.Holding, s.Waiting)
	}
	if got, want := s.AdmittedQueued+s.CancelledWaiting+s.TimedOut, uint64(1+btoi(nextWaiter)); got != want {
		t.Fatalf("iteration %d: %d queued requests accounted for, want %d: %+v", iter, got, want, s)
	}
	acquireDirect(t, l)()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRaceTimeoutVsGrantSameInstant makes, on a fake clock, the holder's
// release and the waiter's queue timeout fall on the same instant. The
// waiter either gets the slot in time or times out and the slot is free;
// it is never lost or granted twice.
func TestRaceTimeoutVsGrantSameInstant(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	tests := []struct {
		name   string
		cancel bool // the waiter's context also ends at that instant
	}{
		{name: "timeout"},
		{name: "timeout and context deadline", cancel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen raceOutcome
			for i := range iterations {
				synctest.Test(t, func(t *testing.T) {
					const timeout = time.Second
					l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: timeout})
					holder := acquireDirect(t, l)
					ctx := context.Background()
					if tt.cancel {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, timeout)
						defer cancel()
					}
					go func() {
						time.Sleep(timeout)
						holder()
					}()
					w := startQueued(t, l, ctx, limiter.Request{})
					time.Sleep(timeout)
					synctest.Wait()
					o, ok := w.returned()
					if !ok {
						t.Fatalf("iteration %d: waiter still blocked at its deadline", i)
					}
					s := l.Stats()
					switch {
					case o.err == nil:
						seen.granted++
						if s.Holding != 1 || s.AdmittedQueued != 1 || s.TimedOut+s.CancelledWaiting != 0 {
							t.Fatalf("iteration %d: granted, %+v", i, s)
						}
						w.letGo()
						synctest.Wait()
					case errors.Is(o.err, limiter.ErrQueueTimeout):
						seen.timedOut++
						if s.Holding != 0 || s.TimedOut != 1 || s.AdmittedQueued+s.CancelledWaiting != 0 {
							t.Fatalf("iteration %d: timed out, %+v", i, s)
						}
					case tt.cancel && errors.Is(o.err, context.DeadlineExceeded):
						seen.cancelled++
						if s.Holding != 0 || s.CancelledWaiting != 1 || s.AdmittedQueued+s.TimedOut != 0 {
							t.Fatalf("iteration %d: context ended, %+v", i, s)
						}
					default:
						t.Fatalf("iteration %d: waiter got %v", i, o.err)
					}
					if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
						t.Fatalf("iteration %d: at the end Holding %d Waiting %d", i, s.Holding, s.Waiting)
					}
					acquireDirect(t, l)()
				})
				if t.Failed() {
					return
				}
			}
			t.Logf("%d iterations: granted %d, context ended %d, timed out %d", iterations, seen.granted, seen.cancelled, seen.timedOut)
		})
	}
}

// TestRacePermitFirstTokenVsRelease reports a request's first token and
// releases it at once, from different goroutines, while another goroutine
// checks the invariants. Whatever the interleaving, the waiting place is
// freed exactly once, and never after the slot: the limiter never counts
// more requests before their first token than it holds (Stats and
// CheckInvariants), and at the end holds nothing.
//
// Regression: FirstToken marked the place freed before taking the lock,
// so a Release running in between freed the slot alone, and for an
// instant Prefilling exceeded Holding.
func TestRacePermitFirstTokenVsRelease(t *testing.T) {
	iterations := 5000
	if testing.Short() {
		iterations = 500
	}
	tests := []struct {
		name   string
		calls  []string // run at once, one goroutine each
		waiter bool     // a waiter is queued behind the holder
	}{
		{name: "FirstToken vs Release", calls: []string{"first", "release"}},
		{name: "each twice", calls: []string{"first", "first", "release", "release"}},
		{name: "FirstToken vs Release with a waiter", calls: []string{"first", "release"}, waiter: true},
		{name: "each twice with a waiter", calls: []string{"first", "release", "first", "release"}, waiter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 1})
			stop := make(chan struct{})
			var checker sync.WaitGroup
			var broken error
			checker.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := l.CheckInvariants(); err != nil {
						broken = err
						return
					}
					if s := l.Stats(); s.Prefilling > s.Holding || s.Prefilling < 0 {
						broken = fmt.Errorf("Prefilling %d, Holding %d", s.Prefilling, s.Holding)
						return
					}
					runtime.Gosched() // with one P, let the racers run
				}
			})
			for i := range iterations {
				p, err := l.Acquire(context.Background())
				if err != nil {
					t.Fatalf("iteration %d: %v", i, err)
				}
				var next chan *limiter.Permit
				if tt.waiter {
					queued := make(chan struct{})
					next = make(chan *limiter.Permit, 1)
					go func() {
						q, err := l.AcquireRequest(context.Background(), limiter.Request{OnQueued: func() { close(queued) }})
						if err != nil {
							t.Errorf("iteration %d: waiter: %v", i, err)
						}
						next <- q
					}()
					<-queued
				}
				var racers sync.WaitGroup
				for _, c := range tt.calls {
					if c == "first" {
						racers.Go(p.FirstToken)
					} else {
						racers.Go(p.Release)
					}
				}
				racers.Wait()
				if next != nil {
					if q := <-next; q != nil {
						q.Release()
					}
				}
				if s := l.Stats(); s.Holding != 0 || s.Prefilling != 0 || s.Waiting != 0 {
					t.Fatalf("iteration %d: after the releases %+v", i, s)
				}
			}
			close(stop)
			checker.Wait()
			if broken != nil {
				t.Fatal(broken)
			}
			s := l.Stats()
			if want := uint64(iterations * btoi(tt.waiter)); s.AdmittedDirect != uint64(iterations) || s.AdmittedQueued != want {
				t.Fatalf("at the end: %+v", s)
			}
		})
	}
}
