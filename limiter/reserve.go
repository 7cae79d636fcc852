package limiter

import "sync/atomic"

// TryReserve is TryAcquire for a caller that cannot wait where it stands
// but hands the request on to a caller that can (slotgate's front end,
// which hands it to net/http to be parked): a request that would wait
// gets a Reservation, which holds a place in the queue until the request
// comes to wait in it. Between the two, the request is counted against Q
// as if it waited, so that requests arriving meanwhile are refused at
// once, as they would be once it waits, rather than also taken for
// requests that will wait and refused later, the place taken. A request
// admitted or refused at once is answered as TryAcquire answers it.
//
// The holder releases the reservation (Release) just before it asks
// again the usual way (AcquireRequest, Park), or when it drops the
// request: a reservation never released takes a queue place for good.
func (l *Limiter) TryReserve(req Request) (*Permit, *Reservation, error) {
	if err := l.classErr(req.Class); err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	t := requestTokens(req)
	v := l.admitLocked(req.Class, t)
	if v == waits {
		l.reserved++
	}
	l.mu.Unlock()
	if v == waits {
		return nil, &Reservation{l: l}, nil
	}
	p, err := l.atOnce(v, req.Class, t)
	return p, nil, err
}

// Reservation is a queue place held for a request on its way to wait
// (TryReserve).
type Reservation struct {
	l        *Limiter
	released atomic.Bool
}

// Release gives the place back. The request then asks again, and may find
// the place taken: it is refused then, as it would have been without the
// reservation. Release is safe to call more than once, from any
// goroutine; the first call gives the place back.
func (r *Reservation) Release() {
	if !r.released.CompareAndSwap(false, true) {
		return
	}
	l := r.l
	l.mu.Lock()
	l.reserved--
	l.mu.Unlock()
}
