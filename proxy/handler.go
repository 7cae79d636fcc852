package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
)

// ServeHTTP walks one request through the proxy: passthrough paths go
// straight to the engine; every other request is admitted by the gate
// (waiting, with its body read, when it has to), then forwarded; finish
// ends it whatever happened, a panic included.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.closing.Load() {
		// net/http closes the connection after an answer whose handler
		// said so (over HTTP/2, it sends GOAWAY); a relayed stream's head
		// says it too (handOff).
		w.Header()["Connection"] = connectionClose
	}
	if pk := resumed(r); pk != nil {
		p.serveResumed(pk, w, r)
		return
	}
	hd := handedOf(r)
	if hd != nil && hd.ex != nil {
		p.serveHanded(hd, w, r)
		return
	}
	defer hd.releasePlace() // whatever happens before Admit
	ex := p.newExchange(w, r)
	defer p.finish(ex, true)
	if p.passthrough[r.URL.Path] {
		ex.Outcome = gate.Passthrough
		p.forward(ex)
		return
	}
	ex.startBodyClock()
	req := p.admissionRequest(ex)
	if p.relay != nil && p.relay.Resume != nil {
		ex.park.ex = ex
		req.Park = &ex.park
	}
	req.Held = hd.place() // the front end's hold on a queue place: Admit's now
	d := p.gate.Admit(r.Context(), &ex.Exchange, req)
	if ex.park.parked {
		return // the exchange is the parking's now (park.go)
	}
	p.serveDecided(ex, d)
}

// serveResumed serves a request back from parking with the gate's
// decision: its body comes again with it, so it is read as a request
// admitted at once reads it.
func (p *Proxy) serveResumed(pk *parking, w http.ResponseWriter, r *http.Request) {
	ex := pk.ex
	ex.rebind(w, r)
	defer p.finish(ex, false)
	d := pk.d
	d.Watched = false
	p.serveDecided(ex, d)
}

// serveDecided answers a refused request, or forwards an admitted one.
func (p *Proxy) serveDecided(ex *exchange, d gate.Decision) {
	if !d.Admitted {
		p.refuse(ex, d)
		return
	}
	if d.Watched && ex.watch.whole {
		ex.holdBody(ex.watch.buf)
	} else if d.Watched {
		ex.streamBody(ex.watch.buf) // what the budget did not hold
	} else if err := ex.prepareBody(); err != nil {
		// Answered as a broken upload, like one that breaks while
		// streaming to the engine.
		ex.engineError(&ex.out, ex.r, err)
		return
	}
	if d.RankChosen {
		// Limits per rank: the gate placed the request, so the engine
		// must run it there.
		ex.r.Header.Set(RankHeader, strconv.Itoa(ex.Rank))
	}
	ex.BeginFlight()
	p.countPrompt(ex)
	p.watchFirstToken(ex)
	p.forward(ex)
}

// admissionRequest is what the gate needs to know of r.
func (p *Proxy) admissionRequest(ex *exchange) gate.Request {
	r := ex.in
	req := gate.Request{TooLarge: r.ContentLength > p.maxBody, Watch: &ex.watch}
	if p.gate.CountsTokens() {
		req.Tokens = ex.promptTokens
	}
	req.Rank, req.Pinned = rankOf(r.Header)
	pol := p.gate.Policy()
	if pol == nil {
		return req
	}
	if pol.SessionHeader != "" {
		req.Session = r.Header.Get(pol.SessionHeader)
	}
	if len(pol.CaptureHeaders) > 0 {
		req.Headers = make(map[string]string, len(pol.CaptureHeaders))
		for _, h := range pol.CaptureHeaders {
			if v := r.Header.Values(h); len(v) > 0 {
				req.Headers[h] = strings.Join(v, ",")
			}
		}
	}
	if r.ContentLength > 0 {
		// Before the body is read, its declared size is all there is:
		// about 4 bytes a token, an upper bound for a JSON body.
		req.InputTokens, req.InputTokensKnown = int(r.ContentLength/4), true
	}
	return req
}

// prepareBody prepares the body of a request admitted without waiting. A
// short one with a declared length is read whole first: it has almost
// always arrived with the headers, and the engine client sends an
// in-memory body in the same write as the headers, where it flushes the
// headers on their own before streaming any other body (two writes, and
// two reads at the engine, per request). Others stream, watched: a long
// prompt goes to the engine as it is read, through the engine client's
// buffer of heldBodyMax, never held whole.
func (ex *exchange) prepareBody() error {
	r := ex.r
	if r.ContentLength <= 0 || r.ContentLength > heldBodyMax {
		ex.streamBody(nil)
		return nil
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		ex.bodyErr.CompareAndSwap(nil, &err)
		return err
	}
	ex.holdBody(buf)
	return nil
}

// heldBodyMax is the longest body of a request admitted at once that is
// read whole before it is sent: the engine client's buffer for bodies
// that stream (HAProxy's too). 256 prompts of 32 KiB arriving together,
// each held whole, grew the heap by some 40 KiB a stream, resident long
// after the bodies were sent (BENCHMARKS.md).
const heldBodyMax = engine.StreamBuf

// finish runs last for every request but a parked one: first says it
// runs in the handler that admitted the request, which leaves a parked
// exchange to the parking (resumed or abandoned). It settles the outcome of a request
// cut short by a panic (httputil.ReverseProxy panics with
// http.ErrAbortHandler when a stream breaks after its headers were sent),
// ends the exchange at the gate (flight, slot, lifecycle, report) and
// writes its access-log line, then re-panics so that net/http aborts the
// connection as it should. A request the first-token watchdog aborted
// gives its slot back as one whose client left: after the abort grace,
// the time the engine takes to see the abort.
func (p *Proxy) finish(ex *exchange, first bool) {
	v := recover()
	// A parked exchange is another goroutine's from the moment it was
	// parked: nothing else of it is read here, ex.relayed included, and a
	// panic after the park (the parking ends the exchange) goes on.
	if first && ex.park.parked {
		if v != nil {
			panic(v)
		}
		return
	}
	if ex.relayed && v == nil {
		return
	}
	gone := ex.clientGone()
	if v != nil {
		if gone {
			ex.Fail(gate.CancelledRunning)
		} else {
			ex.Fail(gate.EngineError)
		}
	}
	if ex.out.status == 0 && gone {
		ex.out.status = StatusClientClosedRequest
	}
	p.end(ex, gone, time.Now())
	if v != nil {
		panic(v)
	}
}

// end ends the exchange at the gate (flight, slot, lifecycle, report),
// gives back its body's budget and writes its access-log line.
func (p *Proxy) end(ex *exchange, gone bool, end time.Time) {
	ex.ftw.end()
	p.gate.Finish(&ex.Exchange, gone || ex.ftw.fired())
	p.budget.give(ex.watch.held)
	p.logAccess(ex, end)
}
