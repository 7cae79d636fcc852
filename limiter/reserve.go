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
// admitted or refused at once is answered as TryAcquire answers it; one
// that holds a place already (req.Held) and still would wait keeps it.
//
// The holder asks again the usual way with the reservation
// (Request.Held), which then ends under the limiter's lock as the request
// is decided or takes its place in the queue; or it releases it (Release)
// when it drops the request: a reservation never ended takes a queue
// place for good.
func (l *Limiter) TryReserve(req Request) (*Permit, *Reservation, error) {
	return l.try(req, true)
}

// try is TryAcquire's and TryReserve's: the request admitted or refused
// at once, answered as TryAcquire answers it; or, when it would wait,
// nothing changed but, with reserve, a place held for it, or the place it
// held kept. A request that would wait gets (nil, its Reservation, nil),
// or (nil, nil, nil) without reserve.
func (l *Limiter) try(req Request, reserve bool) (*Permit, *Reservation, error) {
	if err := l.classErr(req); err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	t := requestTokens(req)
	v := l.admitLocked(req, t)
	held := req.Held
	switch {
	case v != waits:
		l.endHeldLocked(req)
	case reserve && l.ownLocked(req) == 0:
		held = &Reservation{l: l}
		l.reserved++
	}
	l.mu.Unlock()
	if v == waits {
		if !reserve {
			return nil, nil, nil
		}
		return nil, held, nil // a request that holds a place keeps it
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

// ownLocked is 1 when req holds a place of l's (Request.Held) not given
// back yet, 0 otherwise.
func (l *Limiter) ownLocked(req Request) int {
	if r := req.Held; r != nil && r.l == l && !r.released.Load() {
		return 1
	}
	return 0
}

// endHeldLocked gives back the place req holds, if any, with l.mu held:
// the request was decided, or it takes its place in the queue now.
func (l *Limiter) endHeldLocked(req Request) {
	if l.ownLocked(req) == 1 && req.Held.released.CompareAndSwap(false, true) {
		l.reserved--
	}
}

// Release gives the place back. The request then asks again, and may find
// the place taken: it is refused then, as it would have been without the
// reservation. Release is safe to call more than once, from any
// goroutine, and on nil; the first call gives the place back.
func (r *Reservation) Release() {
	if r == nil || !r.released.CompareAndSwap(false, true) {
		return
	}
	l := r.l
	l.mu.Lock()
	l.reserved--
	l.mu.Unlock()
}
