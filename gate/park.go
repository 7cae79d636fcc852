package gate

import (
	"context"
	"errors"
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
func (g *Gate) park(lim *limiter.Limiter, ex *Exchange, pk Parker, tokens int64, chosen bool) Decision {
	leave := &leaver{}
	queuedAt := time.Now()
	resume := func(p *limiter.Permit, err error) {
		gone := pk.Unwatch()
		ex.Queued, ex.QueueWait = true, time.Since(queuedAt)
		pk.Resume(g.parkedDecision(ex, p, err, gone, chosen))
	}
	pk.Watch(leave.gone)
	q, p, err := lim.Park(limiter.Request{Tokens: tokens}, resume)
	if q == nil {
		// Room came (or the queue filled) as the request was parked: it
		// is decided now, unqueued.
		gone := pk.Unwatch()
		pk.Resume(g.parkedDecision(ex, p, err, gone, chosen))
		return Decision{Parked: true}
	}
	g.changed()
	leave.set(q)
	return Decision{Parked: true}
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
	return g.decided(d, ex)
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
