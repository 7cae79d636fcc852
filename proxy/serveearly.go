package proxy

import (
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/gate"
)

// Served before net/http: the proxy port's listener holds each plain
// HTTP/1.1 request whole (head and body) while net/http owes its
// connection no answer (command/strict_early.go), and offers it to
// AnswerEarly before net/http reads it. The common request (a plain POST
// or GET that the gate admits or refuses at once) is then served from
// its raw bytes (a stream too, which the relay then carries:
// earlystream.go): the engine gets it through
// the engine client's hand-written path (SendRaw) and the client gets the
// engine's common answer (a final status, a stated length of at most
// 64 KiB, plain fields) in one write, with no *http.Request, header map,
// response writer or background read. That is most of what net/http and
// the plain path cost a request (BENCHMARKS.md). Every rule of the plain
// path holds, byte for byte where net/http would write the bytes itself:
// the engine request by ReverseProxy's rules (hop-by-hop headers dropped,
// X-Forwarded-* set, the request id), the answer's head as net/http writes
// a handler's (the status text, the fields sorted, a Date when the engine
// sent none), the load report, the token counts, the access-log line.
//
// What the front end does not take goes to net/http as before; an answer
// it does not write itself (a stream it does not lend, a chunked or long
// body, a field it would have to clean up) or an engine failure is handed on: the request
// goes to net/http with its exchange (Handed), whose handler finishes it
// from the engine's answer or error on the usual path, without sending it
// again. A request that would wait goes to net/http to be parked, with
// its place in the queue held meanwhile (Handed, gate.AdmitAtOnce), unless
// the front end parks it itself (earlypark.go): under an overload storm,
// the requests that come while it makes its way to the queue are refused
// here, not also taken for waiters. While the engine works,
// the client is watched for a hang-up once
// the answer is slower than watchAfter (EarlyClient.Watch), as net/http's
// background read watches it: a client that leaves cancels its request
// at the engine and frees its slot.

// EarlyClient is the client's connection, as the listener offers a
// request before net/http reads it.
type EarlyClient interface {
	io.Writer
	RemoteAddr() net.Addr
	// Watch has the client watched once after has passed, while the
	// engine works on its request, until Unwatch: cut.Now runs if the
	// client leaves; bytes it sends meanwhile (its next request) end the
	// watch and are kept for the next read. It returns at once: the
	// watch is another goroutine's (a timer's).
	Watch(after time.Duration, cut Cutter)
	// Unwatch ends the watch, or stops it from starting, waiting for it
	// to stop, and reports whether the client left.
	Unwatch() bool
}

// Cutter cuts a request's engine exchange short: *engine.Cut, given as
// an interface rather than a bound method, which would cost an
// allocation a request.
type Cutter interface{ Now() }

// Early is what AnswerEarly did with a request; its zero value is a
// request left to net/http, untouched.
type Early struct {
	// Answered: the request was answered and is done: the listener drops
	// its bytes.
	Answered bool
	// Gone: the client left (a write failed, or the watch saw it go); no
	// more requests come from its connection.
	Gone bool
	// Handed, when set, is the request's exchange, or only its queue
	// place, to go with the request to net/http: the listener gives it to
	// the handler (TakeHanded).
	Handed *Handed
	// Lent, when set (with Answered), is a stream whose head went out on
	// the client's connection (a LendingClient's), for the relay to carry
	// (earlystream.go), or a request parked to wait in the queue
	// (earlypark.go), either once net/http let go of the connection: the
	// listener fails net/http's reads as a client gone's, and at
	// net/http's Close starts it in place of closing. On a refusal it is
	// the offer to wait in the relay (Lent.Waits, earlywait.go), which the
	// listener takes or leaves: the connection is lent only then.
	Lent *Lent
}

// watchAfter is how long an early request's engine may take before its
// client is watched for a hang-up: the fast answers never pay for the
// watch; a generation's client is watched throughout.
const watchAfter = 5 * time.Millisecond

// AnswerEarly answers, serves or hands on a request that the listener
// holds whole (see the comment at the top of this file), or leaves it to
// net/http.
func (p *Proxy) AnswerEarly(head, body []byte, c EarlyClient) Early {
	h, ok := p.earlyHead(head)
	if !ok || p.closing.Load() {
		return Early{} // net/http closes a closing proxy's answers (ServeHTTP)
	}
	// Refusals first, on an exchange of the stack: under an overload
	// storm most requests are refused, and a served request's exchange
	// is a kilobyte.
	if e, refused := p.refuseAtOnce(&h, c); refused || !p.servesEarly(&h) {
		return e
	}
	return p.serveEarly(&h, head, body, c)
}

// servesEarly reports whether the proxy may serve the request of h
// itself: it serves early at all (servesAnyEarly), and net/http would
// forward h's target as it came.
func (p *Proxy) servesEarly(h *earlyHead) bool {
	return p.earlyServes && plainTarget(h.target, p.reencodeQueries)
}

// servesAnyEarly reports whether the front end may serve requests itself
// under p's configuration, which New fixes (earlyServes): the plain
// path's engine (plain HTTP, no path or query of its own), and no
// first-token watchdog (it watches streams, which the relay carries).
func (p *Proxy) servesAnyEarly() bool {
	u := p.engineURL
	return p.transport == nil && p.client != nil && p.client.Raw() && u.Path == "" && u.RawPath == "" &&
		u.RawQuery == "" && !p.firstToken.cfg.on()
}

// serveEarly serves the request of h when the gate decides it at once.
// Admitted, a request that asks for a stream, or whose head has a field
// the front end does not forward itself, is handed on before it is sent.
func (p *Proxy) serveEarly(h *earlyHead, head, body []byte, c EarlyClient) Early {
	ex := p.exchanges.take(p)
	ex.bytesIn = h.contentLength
	ex.ID, ex.Start, ex.Protocol = p.ids.For(string(h.requestID)), time.Now(), gate.ProtocolHTTP
	d, held, done := p.gate.AdmitAtOnce(&ex.Exchange)
	switch {
	case !done && held != nil:
		// It would wait: parked here, or else net/http's to park, its
		// queue place held meanwhile.
		if e, ok := p.parkEarly(ex, h, head, body, c, held); ok {
			return e
		}
		return Early{Handed: &Handed{held: held}}
	case !done:
		return Early{} // the gate reads it first: net/http's
	case !d.Admitted: // refused since refuseAtOnce asked
		buf := p.early.take()
		e := p.writeEarly(c, buf, p.refusedEarly(&ex.Exchange, h, c.RemoteAddr(), *buf))
		p.exchanges.give(ex)
		return e
	}
	est := ex.heldPrompt(body)
	if est.Stream && !p.streamsEarly(h, c) {
		return p.handOn(ex, h, c, &Handed{d: d}) // for net/http's path to the relay
	}
	buf := p.early.take()
	raw, replay, ok := p.appendEngineRequest(*buf, head, h, ex.ID, c.RemoteAddr())
	if !ok {
		p.early.give(buf, raw)
		return p.handOn(ex, h, c, &Handed{d: d})
	}
	raw = append(raw, body...)
	ex.BeginFlight()
	ex.promptEstimated(est)
	ex.Sent()
	c.Watch(watchAfter, &ex.cut)
	resp, err := p.client.SendRaw(&ex.cut, raw, replay)
	p.early.give(buf, raw)
	if c.Unwatch() {
		ex.cut.Now()
		return p.earlyGone(ex, resp, h, c)
	}
	switch {
	case err == nil && ex.relayableEarly(resp) && (est.Stream || p.streamsEarly(h, c)):
		// An event stream goes to the relay from here whether or not the
		// request asked for one: an engine that streams unasked (a
		// default of its own, "stream" sent some other way) would
		// otherwise take net/http's path to the relay: a request, a
		// handler, a background read to stop and a hijack more per
		// stream (BENCHMARKS.md, whose stream scenario asks for none).
		return p.relayEarly(ex, resp, h, c)
	case err != nil || !earlyAnswerable(resp):
		return p.handOn(ex, h, c, &Handed{d: d, sent: true, resp: resp, err: err})
	}
	return p.answerServed(ex, resp, h, c)
}

// refuseAtOnce answers the request of h when the gate refuses it at once
// (refuseHead), and reports whether it did.
func (p *Proxy) refuseAtOnce(h *earlyHead, c EarlyClient) (Early, bool) {
	buf := p.early.take()
	ans, ok := p.refuseHead(h, c.RemoteAddr(), *buf)
	if !ok {
		p.early.give(buf, ans)
		return Early{}, false
	}
	e := p.writeEarly(c, buf, ans)
	if !e.Gone && p.waitsEarly(c) {
		e.Lent = p.waiting // the listener lends it after a run of refusals
	}
	return e, true
}

// answerServed writes the engine's answer to the client, counts its
// tokens and ends the exchange.
func (p *Proxy) answerServed(ex *exchange, resp *http.Response, h *earlyHead, c EarlyClient) Early {
	dropHopHeaders(resp.Header)
	if p.loadReport != nil {
		ex.reportLoad(resp)
	}
	ex.Responding()
	buf := p.early.take()
	out := appendAnswerHead(*buf, resp, p.dates.at(time.Now()))
	n := len(out)
	out = slices.Grow(out, int(resp.ContentLength))[:n+int(resp.ContentLength)]
	got, rerr := io.ReadFull(resp.Body, out[n:])
	if rerr == nil {
		if countable(resp) {
			tc := newTokenCount(ex)
			tc.add(out[n:])
			tc.end(true)
			p.counters.streams.Put(tc.counter)
		} else {
			ex.Prefilled()
		}
	}
	_ = resp.Body.Close()
	if rerr != nil {
		// The engine broke off its answer: the plain path's copy aborts
		// the client's connection then (net/http's buffer holds a short
		// answer's head, which never goes out); the front end closes it
		// too, having written nothing.
		p.early.give(buf, out)
		p.errLog.Printf("proxy: read error during body copy: %v", rerr)
		ex.Fail(gate.EngineError)
		ex.out.status, ex.out.bytes = resp.StatusCode, int64(got)
		p.client.Recycle(resp)
		p.endEarly(ex, h, c, false)
		p.exchanges.give(ex)
		return Early{Answered: true, Gone: true}
	}
	// The exchange ends before its answer goes out, as on net/http's path,
	// whose handler ends it while a small answer still sits in the
	// connection's buffer: a client that has its answer finds its slot
	// free (and the metrics saying so), and one that left as the answer
	// is written is told by its connection's end, not the outcome, as
	// net/http's last flush fails unseen.
	ex.out.status, ex.FirstByte, ex.out.bytes = resp.StatusCode, time.Now(), resp.ContentLength
	p.client.Recycle(resp) // the last of resp read
	p.endEarly(ex, h, c, false)
	_, werr := c.Write(out)
	p.early.give(buf, out)
	p.exchanges.give(ex)
	return Early{Answered: true, Gone: werr != nil}
}

// handOn hands the exchange on with its request (hd): the handler that
// takes it names the request in its access-log line anew, and an
// exchange abandoned before one does is named here.
func (p *Proxy) handOn(ex *exchange, h *earlyHead, c EarlyClient, hd *Handed) Early {
	ex.line = h.line(c.RemoteAddr())
	hd.ex = ex
	return Early{Handed: hd}
}

// earlyGone ends an early request whose client left while the engine
// worked on it: cancelled, as the plain path cancels it.
func (p *Proxy) earlyGone(ex *exchange, resp *http.Response, h *earlyHead, c EarlyClient) Early {
	if resp != nil {
		_ = resp.Body.Close()
	}
	ex.Fail(gate.CancelledRunning)
	ex.out.status = StatusClientClosedRequest
	p.endEarly(ex, h, c, true)
	p.exchanges.give(ex)
	return Early{Answered: true, Gone: true}
}

// endEarly ends an early exchange at the gate and logs it.
func (p *Proxy) endEarly(ex *exchange, h *earlyHead, c EarlyClient, gone bool) {
	end := time.Now()
	p.gate.Finish(&ex.Exchange, gone)
	if p.access.Core().Enabled(zap.InfoLevel) {
		ex.line = h.line(c.RemoteAddr())
		p.logAccess(ex, end)
	}
}

// writeEarly writes an early refusal, ans, built in buf, to the client.
func (p *Proxy) writeEarly(c EarlyClient, buf *[]byte, ans []byte) Early {
	_, err := c.Write(ans)
	p.early.give(buf, ans)
	return Early{Answered: true, Gone: err != nil}
}

// earlyAnswerable reports whether the front end writes resp itself: a
// final HTTP/1.1 answer with a body of a stated length, at most 64 KiB,
// a Content-Type (net/http would sniff one), no trailers, and fields that
// net/http writes as they are (a token, printable ASCII).
func earlyAnswerable(resp *http.Response) bool {
	if resp.ProtoMajor != 1 || resp.ProtoMinor != 1 || !bodyAllowed(http.MethodPost, resp.StatusCode) ||
		resp.ContentLength < 0 || resp.ContentLength > smallBody || len(resp.TransferEncoding) > 0 ||
		resp.Close || len(resp.Trailer) > 0 || len(resp.Header["Content-Type"]) == 0 {
		return false
	}
	for k, vv := range resp.Header {
		if !plainField(k, vv) {
			return false
		}
	}
	return true
}

// earlyBufs holds the buffers early answers and engine requests are
// built in. Like bufferPool it pools the pointers it hands out, and a
// buffer grown by an append goes back through its pointer: putting a
// slice into a sync.Pool costs an allocation each time.
type earlyBufs struct{ pool sync.Pool }

// take returns an empty buffer, 4 KiB to begin with.
func (e *earlyBufs) take() *[]byte {
	if v := e.pool.Get(); v != nil {
		return v.(*[]byte)
	}
	b := make([]byte, 0, 4096)
	return &b
}

// give gives back buf, now grown, whose bytes are done with, unless one
// large answer grew it past a small body's size.
func (e *earlyBufs) give(buf *[]byte, grown []byte) {
	if cap(grown) > smallBody+4096 {
		return
	}
	*buf = grown[:0]
	e.pool.Put(buf)
}

// statusLine200 is the common status line, rendered once.
var statusLine200 = httpStatusLine(http.StatusOK)

// appendAnswerHead appends resp's head as net/http writes a handler's
// that copied resp's fields: the status line with Go's status text, the
// fields sorted by name, and a Date when resp has none.
func appendAnswerHead(dst []byte, resp *http.Response, date []byte) []byte {
	if resp.StatusCode == http.StatusOK {
		dst = append(dst, statusLine200...)
	} else {
		dst = append(dst, httpStatusLine(resp.StatusCode)...)
	}
	var stack [16]string
	keys := stack[:0]
	for k := range resp.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			dst = appendField(dst, k, v)
		}
	}
	if _, ok := resp.Header["Date"]; !ok {
		dst = append(dst, "Date: "...)
		dst = append(dst, date...)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}
