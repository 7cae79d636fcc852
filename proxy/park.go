package proxy

import (
	"bytes"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/relay"
)

// A request that has to wait leaves net/http while it waits (parking):
// its connection is taken (Hijack), the handler returns, and net/http's
// goroutines and buffers go (most of the 19 KiB a waiting request held,
// BENCHMARKS.md). What is left is the request's bytes and the exchange;
// no goroutine waits: the relay's loop watches the client's socket, and
// sees a client that leaves, and the limiter's grant starts a goroutine
// (limiter.Park). Once the gate decides, the connection goes back to the
// HTTP server (Relay.Resume) with the request's bytes ahead of whatever
// the client sends next: net/http reads the request again, and the
// handler, finding the connection parked, goes on with the decision
// instead of asking the gate.

// Parkable reports whether the request can be parked, now that it has to
// wait: a plain HTTP/1.1 request whose body, of a declared length, is
// small enough to hold. The rest of the rule is the callers': ServeHTTP
// offers parking only when connections can go back to the server (the
// relay on), and the gate asks only for a request that would wait (under
// a policy, once its classifier decided it, and once the watch a
// deferral started has read its body).
func (pk *parking) Parkable() bool {
	p, r := pk.ex.p, pk.ex.in
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 ||
		r.ContentLength < 0 || r.ContentLength > min(smallBody, p.maxBody) || len(r.TransferEncoding) > 0 ||
		r.Header.Get("Expect") != "" || r.Header.Get("Upgrade") != "" {
		return false
	}
	_, ok := connOf(r).(syscall.Conn) // its socket is watched while it waits
	return ok
}

// parking is a parked request: the gate.Parker of an exchange, held in
// it.
type parking struct {
	ex   *exchange
	conn net.Conn // the client's, taken from net/http
	// ahead is what goes back to the server before the connection: the
	// request, then what the client sent after it.
	ahead []byte
	watch *relay.Watched // nil: unwatched
	d     gate.Decision  // the gate's, given by Resume
	// parked is set by Park, on the first handler's goroutine, and never
	// written again: that handler's finish reads it to leave the exchange
	// alone from then on, a panic included.
	parked bool
}

// Park takes the request's connection from net/http, once its body was
// read whole (the gate settled the watch); the handler then returns.
func (pk *parking) Park() bool {
	ex := pk.ex
	if !ex.watch.whole || ex.watch.err != nil {
		return false
	}
	conn, brw, err := http.NewResponseController(ex.out.ResponseWriter).Hijack()
	if err != nil {
		return false
	}
	_ = conn.SetDeadline(time.Time{})
	var next []byte // what the client sent after the request
	pk.conn, next = unwrapAhead(conn, readAheadOf(brw.Reader))
	pk.ahead = appendRequest(make([]byte, 0, 512+len(ex.watch.buf)+len(next)), ex.in, ex.watch.buf)
	pk.ahead = append(pk.ahead, next...)
	pk.parked = true
	// The body now travels with the request's bytes: the watch's copy
	// goes, its budget stays held until the exchange ends (the body is
	// still in memory), and the request and net/http's writer go.
	ex.watch = bodyWatch{ex: ex, held: ex.watch.held}
	ex.out.ResponseWriter = nil
	ex.slim()
	return true
}

// appendRequest appends r as the server read it, with body, to b: the
// request line with the request target as sent, Host, and the headers
// (Content-Length among them; r has no Transfer-Encoding).
func appendRequest(b []byte, r *http.Request, body []byte) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.RequestURI...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.Host...)
	b = append(b, "\r\n"...)
	buf := bytes.NewBuffer(b)
	_ = r.Header.Write(buf) // a bytes.Buffer never fails
	buf.WriteString("\r\n")
	buf.Write(body)
	return buf.Bytes()
}

// Watch has the relay watch the client's socket: a close or a reset
// says the client left; bytes (a pipelined request) do not. Should the
// relay refuse (it stopped: slotgate is shutting down), the request
// waits unwatched, and a client that left is seen when it is decided.
func (pk *parking) Watch(gone func()) {
	w, err := pk.ex.p.relay.Loops.Watch(pk.conn, gone)
	if err == nil {
		pk.watch = w
	}
}

// Unwatch ends the watch, and reports whether the client left.
func (pk *parking) Unwatch() bool {
	if pk.watch != nil && pk.watch.Stop() {
		return true
	}
	return engine.PeerClosed(pk.conn)
}

// Resume gives the connection back to the server, the request ahead of
// it: the handler takes the parking there (resumed) and goes on with d.
func (pk *parking) Resume(d gate.Decision) {
	if pk.ex.Outcome == gate.CancelledQueued {
		pk.endGone()
		return
	}
	pk.d = d
	c := &parkedConn{readAhead: readAhead{Conn: pk.conn, ahead: pk.ahead}}
	c.pk.Store(pk)
	pk.ahead, pk.conn = nil, nil
	pk.ex.p.resuming.Add(1) // until a handler takes it: see Resuming
	pk.ex.p.relay.Resume(c)
}

// parkedConn is a connection back from parking: the server reads the
// request again from ahead, and its handler takes the parking (once).
type parkedConn struct {
	readAhead
	pk atomic.Pointer[parking]
}

// take returns the parking, to the first caller only.
func (c *parkedConn) take() *parking {
	pk := c.pk.Swap(nil)
	if pk != nil {
		pk.ex.p.resuming.Add(-1)
	}
	return pk
}

// Close closes the connection. A parking the handler never took (the
// server was shutting down and refused the connection) ends here: its
// slot goes back and its access-log line is written.
func (c *parkedConn) Close() error {
	if pk := c.take(); pk != nil {
		pk.abandon()
	}
	return c.readAhead.Close()
}

// endGone ends a parked exchange whose client left: there is nobody to
// answer, so the connection closes, and the exchange ends as a refused
// one whose client left does (StatusClientClosedRequest in the log).
func (pk *parking) endGone() {
	ex := pk.ex
	_ = pk.conn.Close()
	pk.ahead, pk.conn = nil, nil
	ex.out.status = StatusClientClosedRequest
	ex.p.end(ex, true, time.Now())
}

// abandon ends a parked exchange that was never resumed.
func (pk *parking) abandon() {
	ex := pk.ex
	if pk.d.Admitted {
		ex.Fail(gate.EngineError)
		ex.p.log.Warn("parked request dropped: the server refused its connection back", zap.String("request_id", ex.ID))
	}
	ex.out.status = http.StatusServiceUnavailable
	ex.p.end(ex, false, time.Now()) // nothing was sent: no abort grace
}

// resumed returns the parking of r's connection, if it comes back from
// parking and its handler has not taken it yet.
func resumed(r *http.Request) *parking {
	c, ok := connOf(r).(*parkedConn)
	if !ok {
		return nil
	}
	return c.take()
}

// rebind gives a parked exchange its request again, as read back by the
// server, and the ResponseWriter to answer it with.
func (ex *exchange) rebind(w http.ResponseWriter, r *http.Request) {
	ex.in, ex.r, ex.bytesIn = r, r, r.ContentLength
	ex.bodyClock = false // the body came with the request, from memory
	ex.line = requestLine{method: r.Method, path: r.URL.Path, proto: r.Proto, client: r.RemoteAddr}
	ex.out = responseWriter{ResponseWriter: w, ex: ex}
}

var _ gate.Parker = (*parking)(nil)
