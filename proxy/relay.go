package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/relay"
)

// Relay hands streamed answers to event loops (--stream-relay epoll):
// once the answer's head is written, the client's connection leaves
// net/http, and the body moves from socket to socket on the relay's
// loops, without a goroutine or buffers per stream. Resume gives a
// connection whose answer ended back to the HTTP server, for its next
// request; nil closes it after the answer.
type Relay struct {
	Loops  *relay.Relay
	Resume func(net.Conn)
	// Idle is how long a client whose stream ended may stay idle, its
	// socket kept in the relay (relay.Stream.Park), before it is closed:
	// the server's idle timeout. 0: no limit.
	Idle time.Duration
}

// errRelayed tells the exchange's ReverseProxy that the answer left it
// (see handOff): it writes nothing more.
var errRelayed = errors.New("proxy: the answer went to the relay")

// relayable reports whether resp can be relayed: an event stream of 200
// over HTTP/1.1, chunked by the engine and read by nothing yet, to a
// client that sent its whole body (held, or streamed to its end), asked
// for no upgrade and takes no trailer (the load report's is added by the
// ReverseProxy). An answer whose first token is watched stays with the
// ReverseProxy, whose copy the watchdog can cut.
func (ex *exchange) relayable(resp *http.Response, watched bool) bool {
	r := ex.in
	if ex.p.relay == nil || watched || r.ProtoMajor != 1 || r.ProtoMinor != 1 ||
		r.Method == http.MethodHead || r.Header.Get("Upgrade") != "" ||
		(ex.bodyPending || ex.body == nil && r.ContentLength != 0) && !ex.bodyEnded.Load() {
		return false
	}
	return ex.relayCarries(resp)
}

// relayCarries reports whether the relay carries resp, whoever served its
// request: an event stream of 200 with no trailer, chunked by the engine
// and read by nothing yet, whose tokens the relay can count if they are
// counted.
func (ex *exchange) relayCarries(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && len(resp.Trailer) == 0 && engine.Detachable(resp) &&
		isEventStream(resp.Header.Get("Content-Type")) && (countable(resp) || !ex.Counting())
}

// handOff writes the answer's head on the client's connection, taken
// from net/http, and gives the body to the relay. It returns errRelayed
// once the exchange is the relay's (ended by relayed.done), or the error
// that stopped it before: then the ReverseProxy answers as usual.
func (ex *exchange) handOff(resp *http.Response) error {
	conn, brw, err := http.NewResponseController(ex.out.ResponseWriter).Hijack()
	if err != nil {
		return nil // not hijackable (a test's writer): the usual copy
	}
	d, ok := engine.Detach(resp)
	if !ok {
		// The request's context ended: the client left.
		_ = conn.Close()
		ex.clientLeftRelay()
		return errRelayed
	}
	resp.Body = http.NoBody // the ReverseProxy closes it
	if err := errors.Join(relay.Usable(conn), relay.Usable(d.Conn)); err != nil {
		// No head went out: the client sees its connection closed.
		d.Done(false)
		_ = conn.Close()
		ex.Fail(gate.EngineError)
		ex.p.log.Warn("relay cannot carry this stream", zap.String("request_id", ex.ID), zap.Error(err))
		return errRelayed
	}
	keep := ex.p.relay.Resume != nil && !ex.in.Close && !ex.p.closing.Load()
	_ = conn.SetDeadline(time.Time{})
	ex.out.status = http.StatusOK
	if _, err := conn.Write(ex.head(resp, keep)); err != nil {
		d.Done(false)
		_ = conn.Close()
		ex.out.writeErr = err
		ex.clientLeftRelay()
		return errRelayed
	}
	// net/http's writer holds its connection's buffers (its reader and
	// the answer's chunking buffer): let them go with it for the stream.
	// The request goes too (slim): its body was read whole, but its
	// reader still points at the connection's read buffer.
	ex.out.ResponseWriter = nil
	ex.slim()
	conn, ahead := unwrapAhead(conn, readAheadOf(brw.Reader))
	_ = newRelayed(ex, d, conn, ahead, keep).add() // a failure ends with the handler (ex.relayed unset)
	return errRelayed
}

// newRelayed makes the stream that carries the body of ex's answer, d,
// to the client's connection, whose head went out; ahead is what was read
// of the client's next request.
func newRelayed(ex *exchange, d *engine.Detached, conn net.Conn, ahead []byte, keep bool) *relayed {
	rs := &relayed{ex: ex, d: d, conn: conn, ahead: ahead, keep: keep}
	if ex.Counting() {
		rs.count = newTokenCount(ex)
	}
	rs.stream = relay.Stream{Engine: d.Conn, Pending: d.Buffered, Client: conn, OnData: rs.data, OnEnd: rs.engineEnded, Done: rs.done}
	if m, ok := conn.(relay.Mover); ok {
		rs.stream.EngineMover, rs.stream.ClientMover = d, m // the sockets leave Go's netpoller for the stream
	}
	return rs
}

// add gives the stream to the relay, which ends the exchange from then on
// (ex.relayed). When the relay refuses it, both connections are closed,
// the exchange has failed, and the caller ends it.
func (rs *relayed) add() error {
	ex := rs.ex
	ex.relayed = true
	err := ex.p.relay.Loops.Add(&rs.stream)
	rs.d.Buffered = nil // the stream's now
	if err != nil {
		ex.relayed = false
		rs.d.Done(false)
		_ = rs.conn.Close()
		ex.Fail(gate.EngineError)
		ex.p.log.Warn("relay refused a stream", zap.String("request_id", ex.ID), zap.Error(err))
	}
	return err
}

// errClientLeftRelay stands for a relay's ClientGone that came without
// its error.
var errClientLeftRelay = errors.New("proxy: the client left its relayed stream")

// clientLeftRelay settles an exchange whose client left as its answer was
// handed to the relay.
func (ex *exchange) clientLeftRelay() {
	ex.Fail(gate.CancelledRunning)
	ex.out.status = StatusClientClosedRequest
}

// head is the answer's head as net/http would write it: the status line,
// the headers the proxy set and the engine's (hop-by-hop ones already
// gone), Date, and the engine's chunked framing, which the relay passes
// through as it is.
func (ex *exchange) head(resp *http.Response, keep bool) []byte {
	h := ex.out.Header()
	for k, vv := range resp.Header {
		h[k] = append(h[k], vv...)
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	}
	h.Del("Content-Length")
	h["Transfer-Encoding"] = []string{"chunked"}
	if !keep {
		h["Connection"] = []string{"close"}
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b) // a bytes.Buffer never fails
	b.WriteString("\r\n")
	return b.Bytes()
}

// slim lets the request go once its answer is the relay's: the exchange
// keeps what its access-log line names (ex.line), and the request's
// headers, URL, body reader and contexts, about a quarter of what a
// relayed stream holds, go with the handler (BENCHMARKS.md, "The relay's
// system calls, and what a stream holds"), which returns right after.
func (ex *exchange) slim() {
	ex.in, ex.r, ex.body = nil, nil, nil
}

// relayed is an exchange whose answer the relay carries.
type relayed struct {
	ex    *exchange
	d     *engine.Detached
	conn  net.Conn
	ahead []byte // what net/http had read of the client's next request
	keep  bool
	count tokenCount // counter nil: not counted
	body  int64      // the body's bytes, unframed
	// led is when the body's first chunks went out with the head, ahead
	// of the relay (relayEarly); zero when the relay wrote them all.
	led time.Time
	// stream is what the relay carries: kept here rather than allocated
	// beside, one object less a stream.
	stream relay.Stream
	// lent starts a stream the front end served (earlystream.go), once
	// net/http let go of its connection.
	lent Lent
	// pooled: ex is the front end's, from its pool, and goes back there
	// at done; net/http's handler may still hold one it hijacked for.
	pooled bool
}

func (rs *relayed) data(p []byte) {
	rs.body += int64(len(p))
	if rs.count.counter != nil {
		rs.count.add(p)
	}
}

// engineEnded hands the slot on once the relay has read the answer's
// end, before the client has it (relay.Stream.OnEnd): on net/http's path
// and the front end's, the exchange ends before the answer's last bytes
// go out, and a client that has its answer finds its slot free (and the
// metrics saying so) there too.
func (rs *relayed) engineEnded() { rs.ex.p.gate.EngineFinished(&rs.ex.Exchange) }

// done ends the exchange as finish does for the ReverseProxy's copy: on
// the relay's loop, once the answer ended, was cut, or its client left.
func (rs *relayed) done(res relay.Result) {
	ex := rs.ex
	if res.ClientGone {
		// The relay's write to the client failed, or it hung up: the
		// exchange's write error, as on the ReverseProxy's path, which
		// is how the token count learns that the client left.
		ex.out.writeErr = cmp.Or(res.Err, errClientLeftRelay)
	}
	if rs.count.counter != nil {
		rs.count.end(res.Ended)
	} else if res.Ended {
		ex.EngineDone()
	}
	rs.d.Done(res.EngineReusable)
	ex.out.bytes = rs.body
	switch {
	case !rs.led.IsZero():
		ex.FirstByte = rs.led
	case !res.FirstWrite.IsZero():
		ex.FirstByte = res.FirstWrite
	}
	switch {
	case res.ClientGone:
		// The status stays the head's 200, which the client saw, as on
		// the ReverseProxy's path.
		ex.Fail(gate.CancelledRunning)
	case errors.Is(res.Err, relay.ErrShutdown):
		ex.Fail(gate.EngineError)
		ex.p.log.Warn("stream cut at shutdown", zap.String("request_id", ex.ID))
	case !res.Ended:
		ex.Fail(gate.EngineError)
		ex.p.log.Warn("engine answer cut", zap.String("request_id", ex.ID), zap.Error(res.Err))
	}
	p := ex.p
	p.end(ex, res.ClientGone, time.Now())
	rs.giveBack(p)
	if res.Ended && rs.keep {
		answeredOutside(rs.conn)
		if !res.Parked { // parked: the relay resumes it (Stream.Park)
			p.relay.Resume(rs.resumable())
		}
		return
	}
	_ = rs.conn.Close()
}

// giveBack returns what the ended stream took from p's pools, for the
// next stream rather than a burst's garbage: its token counter, which
// nothing reads once counted to the end, and a front-end exchange, which
// meets every condition of exchangepool.go by now (its slot released,
// its access-log line written, its engine exchange and answer done).
func (rs *relayed) giveBack(p *Proxy) {
	if rs.count.counter != nil {
		p.counters.streams.Put(rs.count.counter)
		rs.count = tokenCount{}
	}
	if rs.pooled {
		p.exchanges.give(rs.ex)
		rs.ex = nil
	}
}

// resumable is the client's connection with what net/http had already
// read of it put back in front.
func (rs *relayed) resumable() net.Conn {
	if len(rs.ahead) == 0 {
		return rs.conn
	}
	return &readAhead{Conn: rs.conn, ahead: rs.ahead}
}

// readAheadOf copies what br holds (a pipelined request's first bytes,
// rarely any), so that the stream keeps no reader buffer.
func readAheadOf(br *bufio.Reader) []byte {
	n := br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := br.Peek(n) // never fails: n bytes are buffered
	return append([]byte(nil), b...)
}

// unwrapAhead returns the connection under c when c comes with bytes read
// ahead (a relayed stream's, a parked request's), and ahead followed by
// those of them the server has not read yet: the relay and the parking
// read the socket itself.
func unwrapAhead(c net.Conn, ahead []byte) (net.Conn, []byte) {
	switch rc := c.(type) {
	case *readAhead:
		return rc.Conn, append(ahead, rc.ahead...)
	case *parkedConn:
		return rc.Conn, append(ahead, rc.ahead...)
	}
	return c, ahead
}

// readAhead is a connection whose first bytes were read already.
type readAhead struct {
	net.Conn
	ahead []byte
}

// NetConn returns the connection under c, for the listener's count of
// answers (command/strict_early.go).
func (c *readAhead) NetConn() net.Conn { return c.Conn }

// answeredOutside tells the connection under c's wrappers, when it
// counts the answers it was given (the proxy port's listener does, for
// its early answers), that an answer went to it outside net/http: the
// relay's.
func answeredOutside(c net.Conn) {
	if x, ok := connUnder[interface{ AnsweredOutside() }](c); ok {
		x.AnsweredOutside()
	}
}

func (c *readAhead) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// SyscallConn exposes the socket, for the peer check and the relay.
func (c *readAhead) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}
