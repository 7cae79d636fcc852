package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"go.uber.org/zap"
)

// engineError answers a request that the engine did not answer: it is the
// ErrorHandler of httputil.ReverseProxy, called before any response byte
// was written. It maps errors to statuses in one place.
func (p *Proxy) engineError(w http.ResponseWriter, r *http.Request, err error) {
	rec := w.(*recorder) // forward always passes a *recorder
	// The transport failed, so how much of a forwarded HTTP/1.x body it
	// read is unknown; and in full duplex (see forward) net/http's server,
	// draining such a body after the handler, starts a read that races the
	// next request's (it panics "invalid concurrent Body.Read call"). The
	// answer closes the connection instead.
	rec.bodyPending = rec.bodyPending || (r.ProtoMajor == 1 && r.ContentLength != 0)
	var tooLarge *http.MaxBytesError
	switch {
	case rec.clientGone(r):
		p.setOutcome(rec, CancelledRunning)
		rec.status = StatusClientClosedRequest
		return
	case errors.As(err, &tooLarge):
		p.setOutcome(rec, RejectedTooLarge)
		p.answers.tooLarge.write(rec)
		return
	case rec.bodyErr.Load() != nil:
		p.setOutcome(rec, RejectedBadRequest)
		p.answers.badRequest.write(rec)
		return
	case engineUnreachable(err):
		p.setOutcome(rec, RejectedUnavailable)
		p.answers.unreachable.write(rec)
	case isTimeout(err):
		p.setOutcome(rec, EngineError)
		p.answers.gatewayTimeout.write(rec)
	default:
		p.setOutcome(rec, EngineError)
		p.answers.badGateway.write(rec)
	}
	p.log.Warn("engine request failed", zap.String("request_id", rec.id), zap.Error(err))
}

// setOutcome records a failure's outcome, except on passthrough requests,
// which have no admission outcome to replace.
func (p *Proxy) setOutcome(rec *recorder, o Outcome) {
	if rec.outcome != Passthrough {
		rec.outcome = o
	}
}

// engineUnreachable reports whether err means that no usable connection to
// the engine existed: refused, reset or closed before a response.
func engineUnreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
