package proxy

import (
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"syscall"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
)

// forward sends the exchange's request to the engine and streams the
// answer back: the common request on the plain path (plain.go), every
// other through an httputil.ReverseProxy bound to the exchange:
// its Rewrite, Transport, ModifyResponse and ErrorHandler are the
// exchange's own, so each step reads the request's facts off the exchange
// itself.
//
// An HTTP/1.x request body that streams is read by the engine transport
// while the engine's response is already streaming back: the transport
// reads once more after the declared length to check for EOF, and an
// engine may answer before it has read the whole body. Without full
// duplex, net/http's server consumes and closes an unread body as the
// response headers go out, so such a read fails ("invalid Read on closed
// Body") and the transport closes the engine connection under the stream
// it has just started. Full duplex leaves the body to the transport; the
// server still closes it when the handler returns.
func (p *Proxy) forward(ex *exchange) {
	if ex.r.ProtoMajor == 1 && ex.r.ContentLength != 0 && ex.body == nil {
		_ = http.NewResponseController(&ex.out).EnableFullDuplex()
	}
	ex.Sent()
	if ex.plain() {
		ex.forwardPlain()
		return
	}
	rp := httputil.ReverseProxy{
		Rewrite:        ex.rewrite,
		Transport:      ex,
		ModifyResponse: ex.respond,
		ErrorHandler:   ex.engineError,
		BufferPool:     p.buffers,
		ErrorLog:       p.errLog,
	}
	rp.ServeHTTP(&ex.out, ex.r)
}

// rewrite builds the engine request: the engine's URL, X-Forwarded-For
// appended to what the client sent, and the request id.
func (ex *exchange) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(ex.p.engineURL)
	pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
	pr.SetXForwarded()
	pr.Out.Header.Set(requestIDHeader, ex.ID)
}

// RoundTrip is the exchange's engine transport: it sends the engine
// request through the engine client, with the body the proxy holds in
// memory given explicitly.
func (ex *exchange) RoundTrip(req *http.Request) (*http.Response, error) {
	body := ex.heldBody(req)
	if t := ex.p.transport; t != nil {
		if body != nil {
			req = engine.WithBody(req, body)
		}
		return t.RoundTrip(req)
	}
	return ex.p.client.Do(req, body)
}

// heldBody is the body of the engine request when the proxy holds it in
// memory, and nil when it streams.
func (ex *exchange) heldBody(req *http.Request) []byte {
	if ex.body == nil || req.Body == nil || int64(len(ex.body)) != req.ContentLength {
		return nil
	}
	return ex.body
}

// respond is the exchange's ModifyResponse, called once the answer's
// hop-by-hop headers are gone: it adds the load headers and, for a
// request whose tokens are counted or whose first token is watched,
// counts them as the answer streams. A watched answer's head waits for
// its first body bytes (awaitFirstBytes).
func (ex *exchange) respond(resp *http.Response) error {
	if ex.p.loadReport != nil {
		ex.reportLoad(resp)
	}
	ex.Responding()
	watched, err := ex.ftw.answered(resp)
	if err == nil && watched {
		err = ex.awaitFirstBytes(resp)
	}
	if err != nil {
		return err // to engineError
	}
	toRelay := ex.relayable(resp, watched)
	// The engine has the request: a body held in memory (a long prompt,
	// say) is not kept for the rest of a long answer.
	ex.body, ex.watch.buf = nil, nil
	if toRelay {
		if err := ex.handOff(resp); err != nil {
			return err
		}
	}
	if !ex.Counting() && !watched {
		return nil
	}
	if !countable(resp) {
		ex.Prefilled()
		return nil
	}
	tb := newTokenBody(resp.Body, ex)
	resp.Body = tb
	if watched {
		tb.watch = &ex.ftw
		resp.Body = &cutBody{ReadCloser: tb, ex: ex}
	}
	return nil
}

// engineError answers a request that the engine did not answer: the
// ErrorHandler of the exchange's ReverseProxy, called before any response
// byte was written. It maps engine errors to statuses in one place.
func (ex *exchange) engineError(_ http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errRelayed) {
		return // the relay answers, or the client left
	}
	p := ex.p
	// The transport failed, so how much of a forwarded HTTP/1.x body it
	// read is unknown; and in full duplex (see forward) net/http's server,
	// draining such a body after the handler, starts a read that races the
	// next request's (it panics "invalid concurrent Body.Read call"). The
	// answer closes the connection instead.
	ex.bodyPending = ex.bodyPending || (r.ProtoMajor == 1 && r.ContentLength != 0)
	var tooLarge *http.MaxBytesError
	switch {
	case ex.bodyTimedOut():
		// Before clientGone: the deadline ended the request's context
		// too, but the client is still there to be told.
		ex.Fail(gate.RejectedBodyTimeout)
		p.answers.bodyTimeout.write(ex)
		return
	case ex.clientGone():
		ex.Fail(gate.CancelledRunning)
		ex.out.status = StatusClientClosedRequest
		return
	case ex.ftw.fired():
		// The watchdog cancelled the engine request before any of its
		// answer reached the client (see awaitFirstBytes).
		ex.Fail(gate.FirstTokenTimeout)
		p.firstToken.answer.write(ex)
		p.logFirstTokenTimeout(ex)
		return
	case errors.As(err, &tooLarge):
		ex.Fail(gate.RejectedTooLarge)
		p.answers.tooLarge.write(ex)
		return
	case ex.bodyErr.Load() != nil:
		ex.Fail(gate.RejectedBadRequest)
		p.answers.badRequest.write(ex)
		return
	case engineUnreachable(err):
		ex.Fail(gate.RejectedUnavailable)
		p.answers.unreachable.write(ex)
	case isTimeout(err):
		ex.Fail(gate.EngineError)
		p.answers.gatewayTimeout.write(ex)
	default:
		ex.Fail(gate.EngineError)
		p.answers.badGateway.write(ex)
	}
	p.log.Warn("engine request failed", zap.String("request_id", ex.ID), zap.Error(err))
}

// engineUnreachable reports whether err means that the request never
// reached the engine: the dial failed, or the write of the request did
// (refused, or reset or closed as it went out). A failure after the
// request was written (reset or closed before a response) is not: the
// engine may have begun the generation, so it is an engine error, 502,
// which a client does not take as an invitation to send it again. Both
// of the engine client's paths report a failed dial or write as a
// *net.OpError of that Op.
func engineUnreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "write") {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
