package proxy

import (
	"net"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/relay"
)

// Streams served before net/http: a stream is most often its connection's
// first request (a burst of generations opens a burst of connections),
// and net/http's work for it (its request, header map and context, the
// ReverseProxy's path, a hijack whose reader and writer are garbage) is
// what a stream's opening costs beyond the engine's dial, at the moment
// a thousand of them open together. So the front end serves a stream the
// gate admits at once as it serves a common request: it sends it to the
// engine from its raw bytes, and when the answer is one the relay would
// carry (relayable's rule), writes its head as handOff writes it, and
// lends the connection to the relay: the listener makes net/http let go of
// the connection (its reads fail as a client gone's, which net/http
// answers with nothing), and in place of closing it, starts the stream
// (Lent.Start). The relay keeps the client's socket after the
// answer, when nothing of the client's next request was read, until that
// request comes (then Relay.Resume serves it, as handOff's connections
// are served again) or the client hangs up (then the relay closes it):
// a client that opens a connection for each stream, the burst's, leaves
// without ever coming back to net/http. An answer the relay would not
// carry is written by the front end or handed on, as a common request's;
// one it would carry to a request that asked for no stream is lent as a
// stream's is, when the connection can be (serveEarly).

// LendingClient is an EarlyClient whose connection the relay may carry a
// stream on: the proxy port's (command/strict_early.go).
type LendingClient interface {
	EarlyClient
	// Conn is the client's connection, for the relay once net/http let go
	// of it (Early.Lent).
	Conn() net.Conn
}

// streamsEarly reports whether the front end may serve the stream of h
// on c's connection: the relay is on, the connection can be lent to it,
// and the client's head has no TE field, which may ask for the load
// report's trailer that only net/http's path adds (reportLoad).
func (p *Proxy) streamsEarly(h *earlyHead, c EarlyClient) bool {
	_, ok := p.lendable(c)
	return ok && !(h.te && p.loadReport != nil)
}

// lendable returns c's connection when the front end may lend it out of
// net/http: the relay is on, c is a LendingClient, and the relay can work
// its socket.
func (p *Proxy) lendable(c EarlyClient) (net.Conn, bool) {
	lc, ok := c.(LendingClient)
	if !ok || p.relay == nil || relay.Usable(lc.Conn()) != nil {
		return nil, false
	}
	return lc.Conn(), true
}

// relayableEarly reports whether the front end gives resp to the relay:
// an HTTP/1.1 answer the relay carries (relayCarries, as for net/http's
// path), with fields the front end writes as net/http's Header.Write
// would.
func (ex *exchange) relayableEarly(resp *http.Response) bool {
	if resp.ProtoMajor != 1 || resp.ProtoMinor != 1 || !ex.relayCarries(resp) {
		return false
	}
	for k, vv := range resp.Header {
		if !plainField(k, vv) {
			return false
		}
	}
	return true
}

// relayEarly writes the head of ex's stream, resp, and lends the
// connection to the relay for its body (Early.Lent).
func (p *Proxy) relayEarly(ex *exchange, resp *http.Response, h *earlyHead, c EarlyClient) Early {
	conn := c.(LendingClient).Conn()
	dropHopHeaders(resp.Header)
	if p.loadReport != nil {
		ex.reportLoad(resp) // the header alone: the client takes no trailer (streamsEarly)
	}
	ex.Responding()
	ex.line = h.line(c.RemoteAddr())
	d, ok := engine.Detach(resp)
	if !ok {
		// Cut before the head went out: only the client's leaving cuts.
		ex.out.writeErr = errClientLeftRelay
		ex.clientLeftRelay()
		p.end(ex, true, time.Now())
		return Early{Answered: true, Gone: true}
	}
	if err := relay.Usable(d.Conn); err != nil {
		// No head went out: the client sees its connection closed, as
		// handOff's does.
		d.Done(false)
		ex.Fail(gate.EngineError)
		p.log.Warn("relay cannot carry this stream", zap.String("request_id", ex.ID), zap.Error(err))
		p.end(ex, false, time.Now())
		return Early{Answered: true, Gone: true}
	}
	keep := p.relay.Resume != nil
	ex.out.status = http.StatusOK
	// The whole chunks that came with the head go out with it, in one
	// write: the first event does not wait for a loop to take the stream.
	pending := d.Buffered
	lead := relay.Lead(pending)
	buf := p.early.take()
	head := appendStreamHead(*buf, resp, p.dates.at(time.Now()), keep)
	head = append(head, pending[:lead]...)
	_, err := c.Write(head)
	p.early.give(buf, head)
	// The head was resp's last use: what its answer allocated serves the
	// next one (the Detached keeps none of it), rather than a stream's
	// garbage in every burst of streams opening.
	p.client.Recycle(resp)
	if err != nil {
		d.Done(false)
		ex.out.writeErr = err
		ex.clientLeftRelay()
		p.end(ex, true, time.Now())
		return Early{Answered: true, Gone: true}
	}
	rs := newRelayed(ex, d, conn, nil, keep)
	rs.pooled = true // serveEarly took ex from p.exchanges
	if lead > 0 {
		relay.LeadData(pending[:lead], rs.data) // counted as the relay counts
		rs.stream.Pending, rs.led = pending[lead:], time.Now()
	}
	rs.lent.rs = rs
	return Early{Answered: true, Lent: &rs.lent}
}

// appendStreamHead appends the head of a relayed stream, resp, as handOff
// writes it (exchange.head) with net/http's Header.Write: the status line,
// resp's fields (hop-by-hop ones dropped, Content-Length too), a Date
// when resp has none, the chunked framing, and "Connection: close" unless
// keep, sorted by name. resp's fields are plain (plainField).
func appendStreamHead(dst []byte, resp *http.Response, date []byte, keep bool) []byte {
	dst = append(dst, statusLine200...)
	var stack [16]string
	keys := append(stack[:0], "Transfer-Encoding")
	if _, ok := resp.Header["Date"]; !ok {
		keys = append(keys, "Date")
	}
	if !keep {
		keys = append(keys, "Connection")
	}
	for k := range resp.Header {
		if k != "Content-Length" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		vv, ok := resp.Header[k]
		switch {
		case ok:
			for _, v := range vv {
				dst = appendField(dst, k, v)
			}
		case k == "Transfer-Encoding":
			dst = append(dst, "Transfer-Encoding: chunked\r\n"...)
		case k == "Connection":
			dst = append(dst, "Connection: close\r\n"...)
		default: // Date
			dst = appendField(dst, k, date)
		}
	}
	return append(dst, "\r\n"...)
}
