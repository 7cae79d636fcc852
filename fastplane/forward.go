package fastplane

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/slotgate/slotgate/gate"
)

// forward sends the client's request to the engine and relays the answer.
// ex is nil for a passthrough path. The client's request object is sent
// as it is, after the proxy's rewrite: fasthttp has read its body whole.
func (s *Server) forward(rc *fasthttp.RequestCtx, ex *exchange) {
	req := &rc.Request
	closeAfter := req.Header.ConnectionClose()
	s.rewrite(rc, ex)
	resp := fasthttp.AcquireResponse()
	if ex != nil {
		ex.Sent()
	}
	err := s.engine.Do(req, resp)
	if closeAfter {
		rc.SetConnectionClose()
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		s.engineFailed(rc, ex, err)
		return
	}
	if ex != nil {
		ex.Responding()
	}
	s.relay(rc, ex, resp)
}

// rewrite turns the client's request into the engine's: origin form,
// addressed to the engine whatever host the client named, the client's
// address in X-Forwarded-For, the request id, and no hop-by-hop header
// (the engine connection is kept).
func (s *Server) rewrite(rc *fasthttp.RequestCtx, ex *exchange) {
	rc.Request.URI().SetHost(s.engineHost)
	rc.Request.URI().SetScheme("http")
	h := &rc.Request.Header
	h.SetHost(s.engineHost)
	h.SetProtocol("HTTP/1.1") // an HTTP/1.0 client's request too: the engine connection is kept
	h.ResetConnectionClose()
	for _, name := range hopHeaders {
		h.Del(name)
	}
	h.Set("X-Forwarded-For", rc.RemoteIP().String())
	h.Set("X-Forwarded-Proto", "http")
	if ex != nil {
		h.Set(requestIDHeader, ex.ID)
	}
}

// engineFailed answers a request whose engine failed before its answer's
// head, and finishes it.
func (s *Server) engineFailed(rc *fasthttp.RequestCtx, ex *exchange, err error) {
	a, o := s.answers.engineFailure(err)
	id := ""
	if ex != nil {
		id = ex.ID
		ex.Fail(o)
	}
	s.log.Warn("engine request failed", "request_id", id, "error", err)
	s.write(rc, a, id)
	if ex != nil {
		s.finish(ex, false)
	}
}

// relay gives the client the engine's answer: its status and headers now,
// its body as a stream that fasthttp writes after the handler returns,
// one chunk and one flush per read of the engine's body (an SSE event as
// soon as it is read).
func (s *Server) relay(rc *fasthttp.RequestCtx, ex *exchange, resp *fasthttp.Response) {
	resp.Header.CopyTo(&rc.Response.Header)
	size := resp.Header.ContentLength()
	body := resp.BodyStream()
	if body == nil { // no body to stream (a HEAD, a 204): fasthttp read it
		rc.Response.SetBodyRaw(append([]byte(nil), resp.Body()...))
		fasthttp.ReleaseResponse(resp)
		if ex != nil {
			ex.Prefilled()
			ex.EngineDone()
			s.finish(ex, false)
		}
		return
	}
	if size < 0 {
		size = -1 // chunked to the client, whatever the engine framed
	}
	rc.Response.SetBodyStream(&relay{s: s, ex: ex, resp: resp, body: body}, size)
}

// relay is the engine's answer body on its way to the client. fasthttp
// reads it on the connection's goroutine, and closes it exactly once with
// the error that stopped the write, if any.
type relay struct {
	s       *Server
	ex      *exchange // nil: passthrough
	resp    *fasthttp.Response
	body    io.Reader
	started bool
	readErr error // the engine's, other than io.EOF
	closed  bool
}

func (r *relay) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if r.ex != nil && n > 0 && !r.started {
		// The first bytes of the answer: its first token, as far as
		// the plane knows (it does not parse the events).
		r.started = true
		r.ex.FirstByte = time.Now()
		r.ex.Prefilled()
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if r.ex != nil {
			r.ex.EngineDone()
		}
	default:
		r.readErr = err
	}
	return n, err
}

// CloseWithError ends the relay: wErr is what stopped fasthttp writing
// the answer, nil when it was written whole. A write that failed while
// the engine's body read well is the client's departure.
func (r *relay) CloseWithError(wErr error) error {
	if r.closed {
		return nil
	}
	r.closed = true
	if c, ok := r.body.(fasthttp.ReadCloserWithError); ok {
		_ = c.CloseWithError(wErr)
	}
	fasthttp.ReleaseResponse(r.resp)
	if r.ex == nil {
		return nil
	}
	gone := wErr != nil && r.readErr == nil
	switch {
	case gone:
		r.ex.Fail(gate.CancelledRunning)
	case r.readErr != nil:
		r.ex.Fail(gate.EngineError)
	}
	r.ex.Prefilled() // an answer that brought nothing frees its waiting place too
	r.s.finish(r.ex, gone)
	return nil
}
