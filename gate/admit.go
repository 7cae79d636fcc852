package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
)

// Request is what admission needs to know of a request, whatever its
// protocol.
type Request struct {
	// TooLarge says the request is known to be over the adapter's size
	// limit before anything of it was read: it is refused at once.
	TooLarge bool
	// Session and Headers are what a classifier may read; the adapter
	// fills them only when the Policy names a session header or captures
	// headers.
	Session string
	Headers map[string]string
	// InputTokens is an upper bound of the prompt's size, when known
	// before its body was read.
	InputTokens      int
	InputTokensKnown bool
	// Watch proves the client alive while the request waits; nil when the
	// context alone tells (the request's context ends when its client
	// leaves).
	Watch Watch
	// Pinned says the request names a data-parallel rank, Rank. With
	// limits per rank it takes that rank's places.
	Pinned bool
	Rank   int
	// Park, when set, lets the request wait in the queue without its
	// goroutine (see Parker). It is used only for a request that finds
	// no slot free but room in the queue and, under a Policy, that its
	// classifier did not defer (a deferred one has its watch running on
	// its goroutine already).
	Park Parker
	// Held, when set, is the queue place the adapter holds for the request
	// (AdmitAtOnce): the request takes it if it waits, and Admit gives it
	// back otherwise, however it decides.
	Held *limiter.Reservation
	// Tokens, when set, counts the request's prompt tokens for the
	// limits that bound tokens (the prefill-token and queue token limits);
	// a negative count says the adapter could not count them.
	// It is called only while such a limit is in force, and only after
	// the Watch, started and settled before the limiter is asked, has
	// read what it reads (an HTTP request's body): the tokens are then
	// known at admission. nil counts 0 tokens (gRPC, whose messages
	// slotgate does not read).
	Tokens func() int64
}

// Watch is the protocol's proof of life for a request that has to wait.
// HTTP/1 notices a departed client only once the request body has been
// read, so its watch reads the body while the request waits.
type Watch interface {
	// Start begins watching. It is called at most once: on the request's
	// goroutine when it enters the queue, or on the classifier's deferral
	// timer's, or, while a token limit is in force, on the request's
	// goroutine before admission (then settled at once, and only Gone is
	// asked again). A watch that fails calls
	// fail with the reason, which ends the wait; a reason wrapping
	// ErrTooLarge refuses the request as too large, one wrapping
	// ErrBodyTimeout as too slow.
	Start(fail func(error))
	// Settle waits for the watch to end and returns its error, nil when it
	// ended well. cut says the request goes no further, so a slow watch
	// (a client that sends slowly) may be cut short. It is called only
	// after Start, once.
	Settle(cut bool) error
	// Gone reports whether the client is known to have left though the
	// request's context has not ended (an HTTP/1 socket closed by the
	// peer, not yet read by net/http). It must be cheap: it is asked
	// once, of a request granted a slot after waiting.
	Gone() bool
}

// ErrTooLarge is the reason a Watch gives when the request passed the
// adapter's size limit while it waited.
var ErrTooLarge = errors.New("request too large")

// ErrBodyTimeout is the reason a Watch gives when the request's body did
// not arrive in the adapter's time. The adapter's read deadline may end
// the request's context too, so the reason decides, not the context.
var ErrBodyTimeout = errors.New("request body timeout")

// Decision is what Admit decided.
type Decision struct {
	// Admitted is true when the exchange holds a slot: the request goes on
	// to the engine. Otherwise the exchange's Outcome says why not.
	Admitted bool
	// Message is the classifier's own message for rejected_policy and
	// rejected_rate_limited; empty for slotgate's own refusals.
	Message string
	// Watched says the request's Watch was started (and settled).
	Watched bool
	// Parked says the request left Admit's goroutine to wait (Parker):
	// its decision is given to Parker.Resume, and the caller of Admit does
	// nothing more with the exchange.
	Parked bool
	// RankChosen says the gate chose the exchange's Rank for a request
	// pinned to none (limits per rank): the adapter tells the engine.
	RankChosen bool
}

// arrive starts the admission of ex: its gate, class and rank, then the
// refusals that come before any limiter is asked, in this order:
// draining, too large, busy. It reports whether one refused it.
func (g *Gate) arrive(ex *Exchange, req Request) bool {
	ex.g, ex.Class, ex.Rank = g, g.class, Unpinned
	if req.Pinned {
		ex.Rank = req.Rank
	}
	switch {
	case g.draining.Load():
		refuse(ex, RejectedDraining)
	case req.TooLarge:
		refuse(ex, RejectedTooLarge)
	case g.busy != nil && g.busy():
		refuse(ex, RejectedBusy)
	default:
		return false
	}
	return true
}

// refuse ends an exchange's admission with outcome o.
func refuse(ex *Exchange, o Outcome) Decision {
	ex.Outcome = o
	return Decision{}
}

// Admit decides whether the request of ex gets an engine slot, waiting in
// the queue when it has to. ctx is the request's context: it ends when
// the client leaves. On Admitted, the exchange holds a slot until Finish;
// otherwise it holds nothing, and its Outcome is the refusal. Either way
// the adapter ends the exchange with Finish.
//
// The checks come in this order: draining, TooLarge, busy, then the
// classifier and the limiter.
func (g *Gate) Admit(ctx context.Context, ex *Exchange, req Request) Decision {
	defer req.Held.Release() // unless the request took its place (tryOrPark)
	if g.arrive(ex, req) {
		return Decision{}
	}
	lim, rank, ok := g.ranks.pick(req.Pinned, ex.Rank)
	if !ok {
		d := refuse(ex, RejectedBadRequest)
		d.Message = fmt.Sprintf("data-parallel rank %d is not a rank of this engine (0 through %d)", req.Rank, len(g.ranks.all())-1)
		return d
	}
	ex.Rank = rank
	d := g.admitTo(ctx, lim, ex, req)
	d.RankChosen = !req.Pinned && g.ranks.ranked
	return d
}

// admitTo asks lim for a slot, at once when it can.
func (g *Gate) admitTo(ctx context.Context, lim *limiter.Limiter, ex *Exchange, req Request) Decision {
	if g.policy == nil {
		g.obs.Received() // with a policy, once the classifier let it through
	}
	var tokens int64
	read := false // the watch read the request before admission
	if req.Tokens != nil && g.ranks.CountsTokens() {
		if d, ok := g.readFirst(ctx, ex, req.Watch); !ok {
			if g.policy != nil {
				return d // not received: the classifier never saw it
			}
			return g.decided(d, ex)
		}
		tokens, read = req.Tokens(), req.Watch != nil
		if tokens < 0 {
			tokens = g.unknownTokens()
		}
		if req.Watch != nil {
			req.Watch = settled{req.Watch}
		}
	}
	if g.policy == nil && ctx.Err() == nil {
		// Most requests are admitted or refused at once: they need
		// neither the wait's context nor the watch.
		if d, done := g.tryOrPark(ctx, lim, ex, &req, limiter.Request{Tokens: tokens, Held: req.Held}, &read); done {
			return d
		}
	}
	req.Held.Release() // it waits as a request that held nothing
	d := g.admitWaiting(ctx, lim, ex, req, tokens, &read)
	return g.withRead(d, read)
}

// tryOrPark admits or refuses the request at once when the limiter can,
// and parks it (Request.Park) when it would wait; done false leaves it to
// wait on its goroutine. A request to park has its body read first
// (readFirst): the adapter hands it on with the request. When the
// adapter then cannot park it, req's Watch and read say that the body was
// read, for the wait that follows. A request to park holds its queue
// place from the first ask (limiter.TryReserve, or the adapter's, in
// lreq.Held) until it takes it (limiter.Park): the body's read and the
// adapter's Park take long enough for a burst of requests to arrive, and
// each would otherwise find the place free, be taken for a request to
// park, and be refused only once parked.
func (g *Gate) tryOrPark(ctx context.Context, lim *limiter.Limiter, ex *Exchange, req *Request, lreq limiter.Request, read *bool) (d Decision, done bool) {
	parkable := req.Park != nil && req.Park.Parkable()
	var p *limiter.Permit
	var err error
	if parkable {
		p, lreq.Held, err = lim.TryReserve(lreq)
	} else {
		p, err = lim.TryAcquire(lreq)
	}
	switch {
	case p != nil:
		return g.decided(g.withRead(g.grant(ex, p), *read), ex), true
	case err != nil && !errors.Is(err, limiter.ErrWouldWait):
		return g.decided(g.withRead(g.refuseAcquire(ex, err, nil, false), *read), ex), true
	case !parkable:
		return Decision{}, false
	}
	defer lreq.Held.Release() // unless Park took the place
	if !*read {
		if d, ok := g.readFirst(ctx, ex, req.Watch); !ok {
			return g.decided(d, ex), true
		}
		if *read = req.Watch != nil; *read {
			req.Watch = settled{req.Watch}
		}
	}
	if !req.Park.Park() {
		return Decision{}, false
	}
	return g.park(lim, ex, req.Park, lreq, !req.Pinned && g.ranks.ranked), true
}

// readFirst runs the request's watch to its end before admission, so
// that the adapter can count the request's tokens from what it read. A
// watch that fails refuses the request as a failed watch does while it
// waits: too large, too slow, a bad request, or a client that left.
func (g *Gate) readFirst(ctx context.Context, ex *Exchange, w Watch) (Decision, bool) {
	if w == nil {
		return Decision{}, true
	}
	w.Start(func(error) {}) // Settle returns the reason
	if err := w.Settle(false); err != nil {
		return g.refusedRead(ex, err, ctx.Err() != nil), false
	}
	return Decision{}, true
}

// refusedRead refuses a request whose body, read before admission, did
// not arrive (err: its reason; gone: the client left).
func (g *Gate) refusedRead(ex *Exchange, err error, gone bool) Decision {
	d := g.refuseAcquire(ex, context.Canceled, err, gone)
	d.Watched = true
	return d
}

// unknownTokens is what a request whose prompt the adapter could not
// count (Request.Tokens < 0) counts for: the largest token limit in
// force, so that it is admitted only when nothing else is in prefill and
// queued only beside what the queue's limit leaves, never a sentinel that
// would swamp the published counts.
func (g *Gate) unknownTokens() int64 {
	l := g.ranks.Limits()
	return max(l.PrefillTokenLimit, l.QueueTokenLimit)
}

// settled is a Watch that already ran to its end before admission
// (readFirst): starting and settling it again do nothing, and it still
// tells a client that left while its request waited.
type settled struct{ Watch }

func (settled) Start(func(error)) {}
func (settled) Settle(bool) error { return nil }

// withRead marks d as watched when the watch ran before admission.
func (g *Gate) withRead(d Decision, read bool) Decision {
	d.Watched = d.Watched || read
	return d
}

// decided reports to the Observer the decision for a request that reached
// the limiter, and returns d.
func (g *Gate) decided(d Decision, ex *Exchange) Decision {
	g.obs.Decided(string(ex.Outcome))
	return d
}

// admitWaiting classifies the request and asks the limiter for a slot,
// watching the client from the moment the request has to wait.
//
// A classified request that its classifier did not defer (its watch has
// not started) is admitted, refused or parked at once as one without a
// policy is (tryOrPark), in the class the classifier chose; so is one
// that could be parked once the watch its deferral started has read its
// body (settleDeferred); read is admitTo's, updated when its body is read
// to park it.
func (g *Gate) admitWaiting(parent context.Context, lim *limiter.Limiter, ex *Exchange, req Request, tokens int64, read *bool) Decision {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	w := newWatcher(req.Watch, cancel)
	lreq, err := g.classify(ctx, ex, req, w)
	if err != nil {
		// What ended the classification is read before the watch is cut
		// short, which may end ctx (and parent) itself.
		ended, cause, gone := ctx.Err() != nil, context.Cause(ctx), parent.Err() != nil
		w.settle(true)
		d := g.refuseClassified(ex, err, ended, cause, gone)
		d.Watched = w.started()
		return d
	}
	lreq.Tokens = tokens
	if g.policy != nil {
		g.obs.Received()
		if w.started() && !*read && ctx.Err() == nil && req.Park != nil && req.Park.Parkable() {
			if d, ok := g.settleDeferred(parent, ex, w); !ok {
				return g.decided(d, ex)
			}
			req.Watch = settled{req.Watch}
			w, *read = newWatcher(req.Watch, cancel), true
		}
		if !w.started() && ctx.Err() == nil {
			if d, done := g.tryOrPark(ctx, lim, ex, &req, lreq, read); done {
				return d
			}
			w = newWatcher(req.Watch, cancel) // the unstarted one, or its body read
		}
	}
	var queuedAt time.Time
	lreq.OnQueued = func() {
		queuedAt = time.Now()
		w.start()
		g.changed()
	}
	p, err := lim.AcquireRequest(ctx, lreq)
	if !queuedAt.IsZero() {
		ex.Queued = true
		ex.QueueWait += time.Since(queuedAt) // after any classifier deferral
	}
	werr := w.settle(err != nil)
	if werr != nil && err == nil {
		p.Release()
		err = waitCause(ctx, werr)
	}
	gone := parent.Err() != nil
	if err == nil && (gone || ex.Queued && w.gone()) {
		// Granted, but the client left meanwhile: never send it.
		p.Release()
		err, gone = context.Canceled, true
	}
	var d Decision
	if err != nil {
		d = g.refuseAcquire(ex, err, waitCause(ctx, werr), gone || parent.Err() != nil)
	} else {
		d = g.grant(ex, p)
	}
	d.Watched = w.started()
	return g.decided(d, ex)
}

// settleDeferred ends the watch that the deferral timer started, for a
// request that could be parked: its classifier took over deferGrace,
// deferring or merely descheduled on a busy machine. The watch's read of
// the body is the one a request to park makes first (readFirst), so once
// it ends the request may be parked still, rather than wait on its
// goroutine. It reports false, with the refusal, when the read failed.
func (g *Gate) settleDeferred(parent context.Context, ex *Exchange, w *watcher) (Decision, bool) {
	if err := w.settle(false); err != nil {
		return g.refusedRead(ex, err, parent.Err() != nil), false
	}
	return Decision{}, true
}

// waitCause is what ended a wait: the watch's body timeout, which may have
// ended the request's context (and so ctx) before the watch could give
// its reason, else ctx's cause.
func waitCause(ctx context.Context, werr error) error {
	if errors.Is(werr, ErrBodyTimeout) {
		return werr
	}
	return context.Cause(ctx)
}

// grant gives the exchange its slot.
func (g *Gate) grant(ex *Exchange, p *limiter.Permit) Decision {
	if g.pace != nil {
		g.pace.admitted(time.Now())
	}
	ex.admitted, ex.permit, ex.Outcome = true, p, AdmittedDirect
	if ex.Queued {
		ex.Outcome = AdmittedQueued
	}
	return Decision{Admitted: true}
}

// refuseAcquire ends the admission of a request that got no slot. cause
// is the wait's cause, which tells a request over the size limit from a
// departed client; a watch that failed while the client is still there is
// a bad request.
func (g *Gate) refuseAcquire(ex *Exchange, err, cause error, clientGone bool) Decision {
	switch {
	case errors.Is(err, limiter.ErrQueueFull):
		return refuse(ex, RejectedCapacity)
	case errors.Is(err, limiter.ErrQueueTokens):
		return refuse(ex, RejectedQueueTokens)
	case errors.Is(err, limiter.ErrQueueExpired):
		return refuse(ex, RejectedQueueExpired)
	case errors.Is(err, limiter.ErrQueueTimeout):
		return refuse(ex, RejectedQueueTimeout)
	case errors.Is(cause, ErrTooLarge):
		return refuse(ex, RejectedTooLarge)
	case errors.Is(cause, ErrBodyTimeout):
		return refuse(ex, RejectedBodyTimeout)
	case !clientGone:
		return refuse(ex, RejectedBadRequest)
	}
	return refuse(ex, CancelledQueued) // the client left while it waited
}

// refuseClassified ends the admission of a request its classifier did not
// admit: the classifier's rejection; or, when the request's context had
// ended while the classifier deferred it (ended, with its cause; gone when
// the client had left), what ended it.
func (g *Gate) refuseClassified(ex *Exchange, err error, ended bool, cause error, gone bool) Decision {
	switch {
	case errors.Is(err, errUnknownClass):
		return refuse(ex, RejectedPolicy)
	case ended:
		return g.refuseAcquire(ex, context.Canceled, cause, gone)
	}
	rej := admission.AsRejection(err)
	o := RejectedPolicy
	if rej.Kind == admission.RateLimited {
		o = RejectedRateLimited
	}
	d := refuse(ex, o)
	d.Message = rej.Message
	return d
}
