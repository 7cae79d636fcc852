package limiter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// TestTryReserve: a request that would wait holds a queue place until it
// releases it, counted against Q with the waiters by every way in
// (TryReserve, TryAcquire, Refuses, AcquireRequest): the place is never
// given twice, and it comes back once, however often it is released. A
// reservation is not a place in line: a free slot goes to whoever asks.
func TestTryReserve(t *testing.T) {
	l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 2})
	slot, err := l.TryAcquire(limiter.Request{})
	if err != nil {
		t.Fatal(err)
	}
	reserve := func(what string) *limiter.Reservation {
		t.Helper()
		p, r, err := l.TryReserve(limiter.Request{})
		if p != nil || r == nil || err != nil {
			t.Fatalf("%s: TryReserve = %v, %v, %v; want a reservation", what, p, r, err)
		}
		return r
	}
	refused := func(what string) {
		t.Helper()
		if p, r, err := l.TryReserve(limiter.Request{}); p != nil || r != nil || !errors.Is(err, limiter.ErrQueueFull) {
			t.Errorf("%s: TryReserve = %v, %v, %v; want ErrQueueFull", what, p, r, err)
		}
		if err := l.Refuses(limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
			t.Errorf("%s: Refuses = %v; want ErrQueueFull", what, err)
		}
		if _, err := l.TryAcquire(limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
			t.Errorf("%s: TryAcquire = %v; want ErrQueueFull", what, err)
		}
		// Refused at once; a limiter that queued it would have it wait
		// out the timeout.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := l.AcquireRequest(ctx, limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
			t.Errorf("%s: AcquireRequest = %v; want ErrQueueFull", what, err)
		}
	}

	r1 := reserve("the first of Q=2")
	r2 := reserve("the second")
	refused("two reserved")
	if st := l.Stats(); st.Waiting != 0 || st.Holding != 1 {
		t.Errorf("reservations counted as waiters or holders: %+v", st)
	}
	r1.Release()
	r1.Release() // the second release gives nothing back
	r3 := reserve("after a release")
	refused("reserved again, the place not given back twice")

	// r2 comes to wait: its place becomes a waiter's, still one of Q.
	r2.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queued := make(chan struct{})
	granted := make(chan error, 1)
	go func() {
		p, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(queued) }})
		if p != nil {
			p.Release()
		}
		granted <- err
	}()
	<-queued
	refused("one waiting, one reserved")

	// The slot goes to the waiter; once it is done, a free slot is
	// taken at once though r3 still holds its place.
	slot.Release()
	if err := <-granted; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	p, r, err := l.TryReserve(limiter.Request{})
	if p == nil || r != nil || err != nil {
		t.Fatalf("a free slot: TryReserve = %v, %v, %v; want a permit", p, r, err)
	}
	p.Release()
	r3.Release()
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

// TestTryReserveRace: goroutines reserve, release and wait at once; at
// no instant do waiters and reservations together pass Q (the limiter's
// invariants, checked under its lock while they run), and every place
// comes back.
func TestTryReserveRace(t *testing.T) {
	l := newLimiter(t, limiter.Options{Slots: 2, QueueLen: 3})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				p, r, err := l.TryReserve(limiter.Request{})
				switch {
				case p != nil:
					p.Release()
				case r != nil:
					if err := l.CheckInvariants(); err != nil {
						t.Error(err)
						return
					}
					r.Release() // then it waits, as the front end's request does
					if p, err := l.AcquireRequest(context.Background(), limiter.Request{}); err == nil {
						p.Release()
					}
				case !errors.Is(err, limiter.ErrQueueFull):
					t.Errorf("TryReserve: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
	if st := l.Stats(); st.Waiting != 0 || st.Holding != 0 {
		t.Errorf("after the race: %+v", st)
	}
	if p, r, err := l.TryReserve(limiter.Request{}); p == nil || r != nil || err != nil {
		t.Errorf("with every slot free: TryReserve = %v, %v, %v; want a permit", p, r, err)
	}
}

// TestReservationTakesItsPlace: a request that asks with its own
// reservation (Request.Held) is not refused for the place it holds: it
// would wait and keeps the place (TryAcquire, TryReserve), then takes it
// in the queue (Park), the reservation ending under the same lock, so
// that no other request takes the place in between.
func TestReservationTakesItsPlace(t *testing.T) {
	l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1})
	slot, err := l.TryAcquire(limiter.Request{})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := l.TryReserve(limiter.Request{})
	if r == nil || err != nil {
		t.Fatalf("TryReserve = %v, %v", r, err)
	}
	own := limiter.Request{Held: r}
	if _, err := l.TryAcquire(own); !errors.Is(err, limiter.ErrWouldWait) {
		t.Errorf("TryAcquire with its own place = %v; want ErrWouldWait", err)
	}
	if err := l.Refuses(own); err != nil {
		t.Errorf("Refuses with its own place = %v; want nil", err)
	}
	if _, again, err := l.TryReserve(own); again != r || err != nil {
		t.Errorf("TryReserve with its own place = %p, %v; want the same reservation %p", again, err, r)
	}
	if _, _, err := l.TryReserve(limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
		t.Errorf("another request, the place held: TryReserve = %v; want ErrQueueFull", err)
	}
	granted := make(chan error, 1)
	pk, p, err := l.Park(own, func(p *limiter.Permit, err error) {
		if p != nil {
			p.Release()
		}
		granted <- err
	})
	if pk == nil || p != nil || err != nil {
		t.Fatalf("Park with its own place = %v, %v, %v; want it queued", pk, p, err)
	}
	if st := l.Stats(); st.Waiting != 1 {
		t.Errorf("after Park: %+v; want one waiting", st)
	}
	if _, _, err := l.TryReserve(limiter.Request{}); !errors.Is(err, limiter.ErrQueueFull) {
		t.Errorf("another request, the place taken: TryReserve = %v; want ErrQueueFull", err)
	}
	r.Release() // ended by Park: gives nothing back
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
	slot.Release()
	if err := <-granted; err != nil {
		t.Errorf("the parked request: %v", err)
	}
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
}
