package gate

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// Parker is a protocol's way to let a request wait in the queue without
// its goroutine, nor what that goroutine holds (HTTP/1: net/http's
// buffers). The gate calls Park once the request would wait, is
// Parkable, and its Watch has read it; a request parked then waits as a limiter.Parked,
// and the gate gives its decision to Resume.
type Parker interface {
	// Parkable reports whether the request could be parked, before
	// anything of it is read: the gate then has the Watch read it first.
	// It is asked before the limiter, so that a request to park holds its
	// queue place from the first ask.
	Parkable() bool
	// Park takes the request off its goroutine; false says it cannot,
	// and the request then waits as any other.
	Park() bool
	// Watch begins watching the parked request's client, on a goroutine
	// of the adapter's: gone, called at most once, says it left.
	Watch(gone func())
	// Unwatch ends the watch before the request resumes, and reports
	// whether the client is known to have left: a request granted a slot
	// after its client left is never sent. It may be called from gone.
	// A gone that comes after it does nothing: the wait was decided.
	Unwatch() (gone bool)
	// Resume continues the parked request with its decision (admitted,
	// or why not). It is called once per Park that returned true, after
	// Unwatch, on any goroutine (Admit's included, before Admit returns:
	// the caller of Admit must not touch the exchange once it is parked).
	Resume(d Decision)
}

// park queues a parked request (its goroutine left, Parker.Park) on lim,
// watched. Its admission is decided when the limiter tells, on the
// limiter's goroutine; the one asking gets Decision.Parked. chosen says
// the gate chose the request's rank (Decision.RankChosen).
func (g *Gate) park(lim *limiter.Limiter, ex *Exchange, pk Parker, lreq limiter.Request, chosen bool) Decision {
	leave := &leaver{}
	queuedAt := time.Now()
	resume := func(p *limiter.Permit, err error) {
		g.resumeParked(ex, pk, p, err, chosen, queuedAt)
	}
	pk.Watch(leave.gone)
	q, p, err := lim.Park(lreq, resume)
	if q == nil {
		// Room came (or the queue filled) as the request was parked: it
		// is decided now, unqueued.
		g.resumeParked(ex, pk, p, err, chosen, time.Time{})
		return Decision{Parked: true}
	}
	g.changed()
	leave.set(q)
	return Decision{Parked: true}
}

// resumeParked ends a parked request's wait: its watch ends, the wait
// since queuedAt is recorded (zero: it was never queued), the gate decides
// what the limiter told (p, or err), and the Parker resumes with it. It
// runs on the limiter's goroutine, the deadline's timer, the watch's
// goroutine or Admit's: see recoverParked for a panic there.
func (g *Gate) resumeParked(ex *Exchange, pk Parker, p *limiter.Permit, err error, chosen bool, queuedAt time.Time) {
	var st parkedState
	defer g.recoverParked(ex, pk, p, &st)
	gone := pk.Unwatch()
	if !queuedAt.IsZero() {
		ex.Queued = true
		ex.QueueWait += time.Since(queuedAt) // after any classifier deferral
	}
	d := g.parkedDecision(ex, p, err, gone, chosen)
	g.decided(d, ex)
	st.decided, st.delivered = true, true
	pk.Resume(d)
}

// parkedState is how far resumeParked got.
type parkedState struct {
	decided   bool // the Observer heard the decision
	delivered bool // the Parker was given it
}

// recoverParked, deferred by resumeParked, keeps a panic there from ending
// the process: the limiter's grant, the deadline's timer and the watch's
// goroutine are nobody else's to recover (net/http recovers its handlers,
// not those), and one broken request would cut every stream; on Admit's
// goroutine, the handler has already let the parked exchange go. The
// panic is logged with its stack. A decision the Parker never got is
// replaced by a refusal, engine_error, once the slot, if one was
// granted, is handed on: the adapter then answers and ends the exchange
// as for any refusal. A panic in the Parker's Resume is the adapter's to
// clean up: the gate only logs it. The Observer hears the decision once
// either way.
func (g *Gate) recoverParked(ex *Exchange, pk Parker, p *limiter.Permit, st *parkedState) {
	v := recover()
	if v == nil {
		return
	}
	g.log.Error("parked request panicked", "request_id", ex.ID, "panic", v, "stack", string(debug.Stack()))
	if st.delivered {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("parked request panicked as it was refused", "request_id", ex.ID, "panic", v)
		}
	}()
	if p != nil {
		p.Release()
	}
	ex.permit, ex.admitted = nil, false
	d := refuse(ex, EngineError)
	d.Watched = true
	if !st.decided {
		g.decided(d, ex)
	}
	pk.Resume(d)
}

// parkedDecision decides for a parked request what the limiter told: p,
// or err; gone says its client left.
func (g *Gate) parkedDecision(ex *Exchange, p *limiter.Permit, err error, gone, chosen bool) Decision {
	if gone {
		// The client left: a slot granted meanwhile is handed on, and
		// its departure wins over a queue timeout that came with it, as
		// for a request waiting on its goroutine.
		if p != nil {
			p.Release()
		}
		err = context.Canceled
	}
	var d Decision
	if err != nil {
		d = g.refuseAcquire(ex, err, err, gone || errors.Is(err, context.Canceled))
	} else {
		d = g.grant(ex, p)
	}
	d.Watched, d.RankChosen = true, chosen && d.Admitted
	return d
}

// leaver cancels a parked wait when its client leaves, whether the
// watch tells before the wait is queued or after.
type leaver struct {
	mu   sync.Mutex
	q    *limiter.Parked
	left bool
}

func (l *leaver) gone() {
	l.mu.Lock()
	l.left = true
	q := l.q
	l.mu.Unlock()
	if q != nil {
		q.Cancel(context.Canceled)
	}
}

func (l *leaver) set(q *limiter.Parked) {
	l.mu.Lock()
	l.q = q
	left := l.left
	l.mu.Unlock()
	if left {
		q.Cancel(context.Canceled)
	}
}
