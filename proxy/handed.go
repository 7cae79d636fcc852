package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// Handed is a request the front end began before net/http read it
// (AnswerEarly) and hands on to net/http to finish: admitted and not yet
// sent (a stream, or a field the front end does not forward itself), or
// sent, with the engine's answer it does not write itself, or the
// engine's failure. The listener gives it to the handler of the next
// request net/http reads from the connection, which is this request
// (TakeHanded); the handler goes on from where the front end stopped,
// and never sends the request to the engine twice. A request the front
// end found would wait is handed on with no exchange, only its place in
// the queue held (held): its handler asks the gate as for any request,
// with the place (gate.Request.Held), which the request takes if it waits
// (ServeHTTP).
type Handed struct {
	held *limiter.Reservation
	ex   *exchange
	d    gate.Decision
	sent bool // the engine has the request: resp or err is its outcome
	resp *http.Response
	err  error
}

// HandedConn is a connection that may carry a Handed to its next
// request's handler: the proxy port's listener's.
type HandedConn interface {
	// TakeHanded returns the Handed that goes with the request net/http
	// read last, to its first caller only, or nil.
	TakeHanded() *Handed
}

// Abandon ends a handed exchange whose request net/http never served:
// its connection closed first (the client left, or the server shut
// down). Its slot goes back and its access-log line is written.
func (hd *Handed) Abandon() {
	hd.releasePlace()
	ex := hd.ex
	if ex == nil {
		return
	}
	ex.cut.Now()
	if hd.resp != nil {
		_ = hd.resp.Body.Close()
	}
	if !hd.sent {
		ex.EngineDone() // the engine never had it: no abort grace
	}
	if ex.Outcome == gate.AdmittedDirect || ex.Outcome == gate.AdmittedQueued {
		ex.Fail(gate.CancelledRunning)
	}
	ex.out.status = StatusClientClosedRequest
	ex.p.end(ex, true, time.Now())
}

// releasePlace gives back the queue place hd holds, if any; hd may be
// nil.
func (hd *Handed) releasePlace() { hd.place().Release() }

// place is the queue place hd holds, or nil; hd may be nil.
func (hd *Handed) place() *limiter.Reservation {
	if hd == nil {
		return nil
	}
	return hd.held
}

// handedOf returns the Handed that goes with r, taking it, or nil.
func handedOf(r *http.Request) *Handed {
	if hc, ok := connUnder[HandedConn](connOf(r)); ok {
		return hc.TakeHanded()
	}
	return nil
}

// serveHanded finishes a handed request with the ResponseWriter net/http
// gave its handler.
func (p *Proxy) serveHanded(hd *Handed, w http.ResponseWriter, r *http.Request) {
	ex := hd.ex
	ex.rebind(w, r)
	defer p.finish(ex, false)
	if !hd.sent {
		p.serveDecided(ex, hd.d)
		return
	}
	// The request's context ends when its client leaves: the engine's
	// answer is cut then, as the plain path's is.
	stop := context.AfterFunc(r.Context(), ex.cut.Now)
	defer stop()
	if hd.err != nil {
		ex.engineError(&ex.out, r, hd.err)
		return
	}
	// The body went to the engine from the listener's bytes; net/http's
	// copy is read here, so that the connection is clear should the
	// relay take the answer.
	if err := ex.prepareBody(); err != nil {
		_ = hd.resp.Body.Close()
		ex.engineError(&ex.out, r, err)
		return
	}
	ex.relayAnswer(hd.resp)
}
