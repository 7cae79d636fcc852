package limiter_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// told records what a parked request's then was called with, and how
// often.
type told struct {
	mu    sync.Mutex
	calls int
	p     *limiter.Permit
	err   error
}

func (t *told) then(p *limiter.Permit, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.p, t.err = p, err
}

func (t *told) get() (int, *limiter.Permit, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls, t.p, t.err
}

func newParkLimiter(t *testing.T, opts limiter.Options) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestParkAtOnce: a request Park can admit or refuse at once is answered
// at once, and its then is never called.
func TestParkAtOnce(t *testing.T) {
	l := newParkLimiter(t, limiter.Options{Slots: 1, QueueLen: 0})
	var tl told
	pk, p, err := l.Park(limiter.Request{}, tl.then)
	if pk != nil || p == nil || err != nil {
		t.Fatalf("free slot: Park = %v, %v, %v; want a permit", pk, p, err)
	}
	pk, p2, err := l.Park(limiter.Request{}, tl.then)
	if pk != nil || p2 != nil || !errors.Is(err, limiter.ErrQueueFull) {
		t.Fatalf("no slot, no queue: Park = %v, %v, %v; want ErrQueueFull", pk, p2, err)
	}
	if _, _, err := l.Park(limiter.Request{Class: 3}, tl.then); !errors.Is(err, limiter.ErrBadClass) {
		t.Fatalf("class out of range: err = %v, want ErrBadClass", err)
	}
	p.Release()
	if n, _, _ := tl.get(); n != 0 {
		t.Fatalf("then called %d times for requests answered at once", n)
	}
	if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 || s.AdmittedDirect != 1 || s.RejectedFull != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestParkWaits: a parked request keeps its place in the one FIFO queue
// beside AcquireRequest's waiters, is told of its slot once, on another
// goroutine, and is counted as admitted from the queue.
func TestParkWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newParkLimiter(t, limiter.Options{Slots: 1, QueueLen: 2})
		holder, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var tl told
		pk, p, err := l.Park(limiter.Request{}, tl.then)
		if pk == nil || p != nil || err != nil {
			t.Fatalf("Park = %v, %v, %v; want it parked", pk, p, err)
		}
		second := make(chan error, 1)
		go func() {
			p, err := l.Acquire(context.Background())
			if err == nil {
				p.Release()
			}
			second <- err
		}()
		synctest.Wait()
		if s := l.Stats(); s.Waiting != 2 {
			t.Fatalf("waiting %d, want 2", s.Waiting)
		}
		holder.Release()
		synctest.Wait()
		n, got, err := tl.get()
		if n != 1 || got == nil || err != nil {
			t.Fatalf("then called %d times, last with %v, %v; want once with a permit", n, got, err)
		}
		select {
		case err := <-second:
			t.Fatalf("the later waiter went first (%v)", err)
		default:
		}
		got.Release()
		synctest.Wait()
		if err := <-second; err != nil {
			t.Fatalf("later waiter: %v", err)
		}
		pk.Cancel(context.Canceled) // told already: nothing
		if n, _, _ := tl.get(); n != 1 {
			t.Fatalf("then called %d times after Cancel of a granted request, want 1", n)
		}
		if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 || s.AdmittedQueued != 2 || s.CancelledWaiting != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestParkEnds: a parked request leaves the queue when cancelled or when
// its deadline passes, is told why once, and never takes a slot later.
func TestParkEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    limiter.Options
		cancel  bool
		want    error
		counted func(limiter.Stats) uint64
	}{
		{"cancelled", limiter.Options{Slots: 1, QueueLen: 1}, true, context.Canceled,
			func(s limiter.Stats) uint64 { return s.CancelledWaiting }},
		{"queue delay", limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: time.Second}, false, limiter.ErrQueueExpired,
			func(s limiter.Stats) uint64 { return s.TimedOut }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newParkLimiter(t, tc.opts)
				holder, err := l.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				var tl told
				pk, _, err := l.Park(limiter.Request{}, tl.then)
				if pk == nil || err != nil {
					t.Fatalf("Park = %v, %v; want it parked", pk, err)
				}
				if tc.cancel {
					pk.Cancel(context.Canceled)
				} else {
					time.Sleep(2 * time.Second)
				}
				synctest.Wait()
				n, p, err := tl.get()
				if n != 1 || p != nil || !errors.Is(err, tc.want) {
					t.Fatalf("then called %d times, last with %v, %v; want once with %v", n, p, err, tc.want)
				}
				holder.Release()
				pk.Cancel(context.Canceled)
				synctest.Wait()
				if n, _, _ := tl.get(); n != 1 {
					t.Fatalf("then called %d times, want 1", n)
				}
				s := l.Stats()
				if s.Holding != 0 || s.Waiting != 0 || tc.counted(s) != 1 || s.AdmittedQueued != 0 {
					t.Fatalf("stats %+v", s)
				}
			})
		})
	}
}

// TestParkCancelRacesGrant: a parked request cancelled as its slot is
// granted is told exactly once, and the slot is either its own or handed
// on: nothing is lost nor held twice.
func TestParkCancelRacesGrant(t *testing.T) {
	for range 200 {
		l := newParkLimiter(t, limiter.Options{Slots: 1, QueueLen: 1})
		holder, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		got := make(chan *limiter.Permit, 1)
		pk, _, err := l.Park(limiter.Request{}, func(p *limiter.Permit, err error) {
			calls.Add(1)
			got <- p
		})
		if pk == nil || err != nil {
			t.Fatalf("Park = %v, %v", pk, err)
		}
		var release sync.WaitGroup
		release.Go(holder.Release)
		pk.Cancel(context.Canceled)
		if p := <-got; p != nil {
			p.Release()
		}
		release.Wait()
		if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 || s.AdmittedQueued+s.CancelledWaiting != 1 {
			t.Fatalf("stats %+v", s)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("then called %d times, want 1", n)
		}
	}
}
