package limiter

import (
	"errors"
	"sync/atomic"
	"time"
)

// Park is AcquireRequest for a caller that waits without a goroutine: a
// request that has to wait is queued, and Park returns at once.
//
// A request admitted or refused at once is answered as AcquireRequest
// answers it (its Permit; ErrQueueFull, ErrQueueTokens, or an error
// wrapping ErrBadClass), and then is never called. A request that has to
// wait gets a Parked, and then is called exactly once, on a goroutine of
// its own: with the request's Permit when it is granted a slot, or with
// an error when it leaves the queue first: ErrQueueTimeout (or
// ErrQueueExpired) when its deadline passes, or the cause given to
// Parked.Cancel. req.OnQueued is not called: the Parked says the request
// waits. A parked request and one waiting in AcquireRequest share one
// queue, in one order.
func (l *Limiter) Park(req Request, then func(*Permit, error)) (*Parked, *Permit, error) {
	if err := l.classErr(req); err != nil {
		return nil, nil, err
	}
	pk := &Parked{l: l, then: then}
	l.mu.Lock()
	t := requestTokens(req)
	v := l.admitLocked(req, t)
	l.endHeldLocked(req)
	if v != waits {
		l.mu.Unlock()
		p, err := l.atOnce(v, req.Class, t)
		return nil, p, err
	}
	// The timer is armed before the request is queued, under the lock:
	// a grant made as it is queued (enqueueLocked may grant a newcomer)
	// then finds it, and a deadline already passed waits for the lock.
	if deadline, expiry := l.deadline(req); !deadline.IsZero() {
		pk.timer = time.AfterFunc(time.Until(deadline), func() { pk.end(expiry) })
	}
	l.enqueueLocked(req, t, pk)
	l.mu.Unlock()
	return pk, nil, nil
}

// Parked is a request waiting in the queue without a goroutine (Park).
type Parked struct {
	l     *Limiter
	w     *waiter // set under the lock, as it is queued
	then  func(*Permit, error)
	timer *time.Timer // the deadline's; nil without one
	// told is set by whoever calls then: the grant, or the end of the
	// wait (Cancel, the deadline); the other then does nothing.
	told atomic.Bool
}

// granted tells the caller of its slot; it runs on a goroutine of its
// own, started by the grant under the limiter's lock.
func (pk *Parked) granted() {
	if !pk.told.CompareAndSwap(false, true) {
		return // Cancel came in the same instant, and handed the slot on
	}
	pk.stopTimer()
	pk.w.countAdmitted()
	pk.then(&Permit{l: pk.l, tokens: pk.w.tokens}, nil)
}

// Cancel ends the wait of a caller that left, with cause (say,
// context.Canceled): the request leaves the queue; or, granted in the
// same instant but not yet told, it hands its slot on, as a waiter of
// AcquireRequest whose context ends does; then is called with cause. Once
// then is called with a Permit, Cancel does nothing: the caller holds the
// slot, and releases it. It is safe to call more than once, from any
// goroutine.
func (pk *Parked) Cancel(cause error) { pk.end(cause) }

// end ends the wait with cause, unless the caller was told already, or
// the cause is the deadline and the slot came in time.
func (pk *Parked) end(cause error) {
	l := pk.l
	l.mu.Lock()
	w := pk.w
	if w.granted && errors.Is(cause, ErrQueueTimeout) || !pk.told.CompareAndSwap(false, true) {
		l.mu.Unlock()
		return
	}
	if w.granted {
		l.reverseGrantLocked(w)
	} else {
		l.removeLocked(w, cause)
	}
	l.mu.Unlock()
	pk.stopTimer()
	countGiveUp(w.cls, cause)
	pk.then(nil, cause)
}

func (pk *Parked) stopTimer() {
	if pk.timer != nil {
		pk.timer.Stop()
	}
}
