package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
)

type recorderKey struct{}

// smallBody is the largest declared request body taken to have arrived with
// its headers; see answer.write.
const smallBody = 64 << 10

// ServeHTTP admits r through the limiter and forwards it to the engine.
//
// The order matters: passthrough paths skip everything; draining and an
// over-long declared body are refused before admission; admission comes
// before the body is read; the slot is released (deferred last, so it runs
// first) before the request is reported.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, start: time.Now(), id: p.ids.forRequest(r), bytesIn: r.ContentLength, class: p.class,
		bodyPending: r.ProtoMajor == 1 && (r.ContentLength < 0 || r.ContentLength > min(smallBody, p.maxBody))}
	defer p.finish(rec, r)
	switch {
	case p.passthrough[r.URL.Path]:
		rec.outcome = Passthrough
		p.forward(rec, r)
		return
	case p.draining.Load():
		p.refuse(rec, &p.answers.draining, RejectedDraining)
		return
	case r.ContentLength > p.maxBody:
		p.refuse(rec, &p.answers.tooLarge, RejectedTooLarge)
		return
	case p.busy != nil && p.busy():
		p.refuse(rec, &p.answers.busy, RejectedBusy)
		return
	}
	release, r := p.admit(rec, r)
	if release == nil {
		return
	}
	defer p.releaseSlot(rec, r, release)
	if err := rec.bodyErr.Load(); err != nil {
		p.engineError(rec, r, *err)
		return
	}
	r = p.trackFlight(rec, r)
	if rec.flight != nil {
		defer rec.flight.End() // deferred after release, so it runs before it
	}
	p.forward(rec, r)
}

// abortGrace is how long the slot of a request whose client left while
// the engine was serving it stays taken before it is handed on. The
// engine needs a moment to see the abort (vLLM frees the request at its
// next step), so handing the slot on at once would let it run N+1
// requests; and clients that die together (a client process killed with
// many requests) close their sockets over a few hundred microseconds,
// which the queued ones' grants must not outrun (see clientLeft).
const abortGrace = 5 * time.Millisecond

// releaseSlot releases a request's slot: at once, or after abortGrace
// when its client left while it ran.
func (p *Proxy) releaseSlot(rec *recorder, r *http.Request, release func()) {
	if rec.clientGone(r) {
		time.AfterFunc(abortGrace, func() { release(); p.changed() })
		return
	}
	release()
}

func (p *Proxy) refuse(rec *recorder, a *answer, outcome Outcome) {
	rec.outcome = outcome
	a.write(rec)
}

// admit classifies r and takes a slot for it, or answers it. It returns
// the slot's release function and the request to forward, or a nil
// release when r was answered.
//
// The body of a request that waits (deferred by its classifier, or in the
// queue) is read meanwhile, so that a client that leaves is seen at once:
// net/http notices a closed connection only once the body has been read.
func (p *Proxy) admit(rec *recorder, r *http.Request) (func(), *http.Request) {
	if p.admission == nil && r.Context().Err() == nil {
		// Most requests are admitted or refused at once: they need
		// neither the wait's context nor the body read below.
		release, err := p.lim.TryAcquire(limiter.Request{})
		switch {
		case err == nil:
			rec.admitted, rec.outcome = true, AdmittedDirect
			return release, p.directBody(rec, r)
		case !errors.Is(err, limiter.ErrWouldWait):
			p.refuseAdmission(rec, err, nil, false)
			return nil, r
		}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	lb := &lazyBody{body: r.Body, max: p.maxBody, cancel: cancel}
	lreq, err := p.classify(ctx, rec, r, lb)
	if err != nil {
		// What ended the classification is read before the body read is
		// cut short, which ends ctx (and, on HTTP/1, r's context) itself.
		ended, cause, gone := ctx.Err() != nil, context.Cause(ctx), r.Context().Err() != nil
		p.settleBody(rec, r, lb.get(), true)
		p.refuseClassified(rec, err, ended, cause, gone)
		return nil, r
	}
	var queuedAt time.Time
	lreq.OnQueued = func() {
		queuedAt = time.Now()
		lb.start()
		p.changed()
	}
	release, err := p.lim.AcquireRequest(ctx, lreq)
	body := lb.get()
	if !queuedAt.IsZero() {
		rec.queued = true
		rec.queueWait += time.Since(queuedAt) // after any classifier deferral
	}
	if body != nil {
		p.settleBody(rec, r, body, err != nil)
		if err == nil && body.err != nil {
			release()
			err = context.Cause(ctx)
		}
	}
	gone := r.Context().Err() != nil
	if err == nil && (gone || rec.queued && clientLeft(r)) {
		// Granted, but the client left meanwhile: never forward it.
		release()
		err, gone = context.Canceled, true
	}
	if err != nil {
		p.refuseAdmission(rec, err, context.Cause(ctx), gone || r.Context().Err() != nil)
		return nil, r
	}
	rec.admitted, rec.outcome = true, AdmittedDirect
	if rec.queued {
		rec.outcome = AdmittedQueued
	}
	if body != nil {
		rec.bytesIn, rec.body = int64(len(body.buf)), body.buf
		return release, withBody(r, body.buf)
	}
	return release, p.directBody(rec, r)
}

// directBody prepares the body of a request admitted without waiting. A
// small one with a declared length is read whole first: it has almost
// always arrived with the headers, and the engine transport sends an
// in-memory body in the same write as the headers, where it flushes the
// headers on their own before streaming any other body (two writes, and
// two reads at the engine, per request). Others stream, watched.
func (p *Proxy) directBody(rec *recorder, r *http.Request) *http.Request {
	if r.ContentLength <= 0 || r.ContentLength > smallBody {
		return p.watchBody(rec, r)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		// Answered in ServeHTTP as a broken upload, like one that breaks
		// while streaming to the engine.
		rec.bodyErr.CompareAndSwap(nil, &err)
		return r
	}
	rec.body = buf
	return withBody(r, buf)
}

// settleBody waits for the read of a waiting request's body to end; when
// the request is refused, it ends the read at once rather than wait for a
// slow client.
func (p *Proxy) settleBody(rec *recorder, r *http.Request, body *queuedBody, refused bool) {
	if body == nil {
		return
	}
	if refused && !body.finished() {
		_ = http.NewResponseController(rec).SetReadDeadline(time.Now())
	}
	<-body.done
	// A body read to its end leaves nothing on the connection; one whose
	// read failed or was cut short may leave anything.
	rec.bodyPending = body.err != nil && r.ProtoMajor == 1
}

// watchBody wraps the body of a directly admitted request: bounded when
// its length is unknown, and watched so that a broken upload is answered
// as the client's fault rather than the engine's.
func (p *Proxy) watchBody(rec *recorder, r *http.Request) *http.Request {
	if r.ContentLength == 0 {
		return r
	}
	body := r.Body
	if r.ContentLength < 0 {
		body = http.MaxBytesReader(rec, body, p.maxBody)
	}
	out := new(http.Request)
	*out = *r
	out.Body = &watchedBody{ReadCloser: body, rec: rec}
	return out
}

// refuseAdmission answers a request that got no slot. cause is the wait
// context's cause, which tells a body over the limit from a departed
// client; a body that failed while the client is still there is a bad
// request, answered as such.
func (p *Proxy) refuseAdmission(rec *recorder, err, cause error, clientGone bool) {
	switch {
	case errors.Is(err, limiter.ErrQueueFull):
		p.refuse(rec, &p.answers.capacity, RejectedCapacity)
	case errors.Is(err, limiter.ErrQueueTimeout):
		p.refuse(rec, &p.answers.queueTimeout, RejectedQueueTimeout)
	case errors.Is(cause, errBodyTooLarge):
		p.refuse(rec, &p.answers.tooLarge, RejectedTooLarge)
	case !clientGone:
		p.refuse(rec, &p.answers.badRequest, RejectedBadRequest)
	default:
		// The client left while queued; it will not read an answer.
		rec.outcome = CancelledQueued
		rec.status = StatusClientClosedRequest
	}
}

// forward sends r to the engine and streams the answer back.
//
// An HTTP/1.x request body is read by the engine transport on its own
// goroutine, while the engine's response is already streaming back: the
// transport reads once more after the declared length to check for EOF,
// and an engine may answer before it has read the whole body. Without full
// duplex, net/http's server consumes and closes an unread body as the
// response headers go out, so such a read fails ("invalid Read on closed
// Body") and the transport closes the engine connection under the stream
// it has just started. Full duplex leaves the body to the transport; the
// server still closes it when the handler returns.
func (p *Proxy) forward(rec *recorder, r *http.Request) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 && rec.body == nil {
		_ = http.NewResponseController(rec).EnableFullDuplex()
	}
	p.event(rec, admission.Sent)
	p.rp.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), recorderKey{}, rec)))
}

// rewrite builds the engine request: the engine's URL, X-Forwarded-For
// appended to what the client sent, and the request id.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.engine)
	pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
	pr.SetXForwarded()
	if rec, ok := pr.In.Context().Value(recorderKey{}).(*recorder); ok {
		pr.Out.Header.Set(requestIDHeader, rec.id)
	}
}
