package command

import (
	"bytes"
	"cmp"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/httpsyntax"
	"github.com/slotgate/slotgate/internal/rawio"
	"github.com/slotgate/slotgate/proxy"
)

// strictListener makes the proxy port refuse, with 400 and OpenAI's error
// shape, the HTTP/1.x request heads whose framing a server and a proxy in
// front of it may read differently (request smuggling), before net/http
// parses them. Go 1.26's server, left to itself:
//
//   - accepts Content-Length beside "Transfer-Encoding: chunked": it drops
//     the Content-Length (transfer.go fixLength), so a handler cannot tell;
//   - accepts several Content-Length lines of one value, merged into one;
//   - accepts a bare LF as a line ending in the head and in a chunked
//     body's trailer (textproto reads lines with bufio.Reader.ReadLine);
//   - accepts obsolete line folding, a header line that begins with a space
//     or tab, joined to the previous value (textproto.readContinuedLineSlice);
//   - ignores and deletes Transfer-Encoding on an HTTP/1.0 request (issue
//     12785), whose body then is empty: a chunked body that follows becomes
//     the next request on a keep-alive connection;
//   - answers 501, not 400, to a Transfer-Encoding other than "chunked";
//   - refuses different Content-Length values (400, plain text) and a bare
//     LF inside a chunked body's size lines, as wanted;
//   - drops up to four CR or LF bytes before the request line that
//     follows a POST (RFC 9112 §2.2), which the framing does too
//     (skipBlank).
//
// So a handler cannot make these checks: a listener must, on the raw bytes.
// Each connection frames its requests as net/http will (request line,
// header lines, then a body of Content-Length bytes or chunks), holding a
// head's header lines back until the head is whole and checked, and
// passing bodies through as they come. The request line goes through as
// soon as it is whole, so that net/http starts its header timeout when a
// head begins, as it does on its own. A refused head never reaches
// net/http: a stand-in head takes its place, which proxy.Strict answers
// 400 (431 for a head too large) in OpenAI's error shape, in turn after
// the answers to the requests before it, and the connection is closed. A chunked body that breaks the rules (bare LF in its
// trailer, obsolete folding there) fails its read, which the proxy answers
// as a body that could not be read.
//
// A connection that opens with HTTP/2's preface (h2c with prior
// knowledge, gRPC) is passed through: HTTP/2 frames its own messages. So is
// one after a "101 Switching Protocols" (WebSocket): the connection of an
// upgrade request that is not switched is closed after its answer, since
// what follows cannot be framed. An upgrade request with a body is
// refused; an Upgrade of h2c alone is not an upgrade here (proxy.Strict
// ignores it).
type strictListener struct {
	net.Listener
	maxHead int // the most bytes a head may take, request line included
	// bufs holds the read buffers of connections that have nothing
	// buffered: a connection waiting for its answer, or idle, holds
	// none, which matters with thousands of queued requests.
	bufs    *sync.Pool
	early   earlyAnswerer // nil: every request goes to net/http
	idle    time.Duration // net/http's wait for a kept connection's next request
	header  time.Duration // net/http's header timeout
	stopped *atomic.Bool  // stopEarly
}

// newStrictListener frames the connections that srv serves from ln. With
// early set, it answers the requests that early refuses at once itself
// (strict_early.go), and sets srv.ConnState to learn when net/http owes a
// connection no answer.
func newStrictListener(ln net.Listener, srv *http.Server, early earlyAnswerer) strictListener {
	// net/http reads up to MaxHeaderBytes plus 4096 bytes of slack.
	l := strictListener{Listener: ln, maxHead: srv.MaxHeaderBytes + 4096,
		bufs:    &sync.Pool{New: func() any { b := make([]byte, 0, inBufSize); return &b }},
		stopped: new(atomic.Bool)}
	if early != nil {
		// net/http waits as long for a kept connection's next request
		// as for a whole request when it has no idle timeout, and as
		// long for a head when it has no header timeout.
		l.early, l.idle, l.header = early, cmp.Or(srv.IdleTimeout, srv.ReadTimeout), cmp.Or(srv.ReadHeaderTimeout, srv.ReadTimeout)
		srv.ConnState = countAnswers(srv.ConnState)
	}
	return l
}

// stopEarly ends early answers, before the server shuts down: net/http
// then answers or drops each connection's next request as a server
// shutting down does.
func (l strictListener) stopEarly() { l.stopped.Store(true) }

func (l strictListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &strictConn{Conn: c, sock: rawio.NewSocket(c), maxHead: l.maxHead, bufs: l.bufs,
		earlyState: earlyState{early: l.early, idle: l.idle, headerTimeout: l.header, stopped: l.stopped}}
	sc.client.c = sc
	sc.headerRead.Store(true) // net/http's first read of it
	return sc, nil
}

// stage is where a connection's framing stands.
type stage int

const (
	stPreface   stage = iota // the first bytes: HTTP/2's preface or a head
	stHead                   // a request head
	stBody                   // left bytes of a Content-Length body
	stChunkSize              // a chunk-size line
	stChunkData              // left bytes of a chunk
	stChunkEnd               // the CRLF after a chunk
	stTrailer                // trailer lines, up to an empty one
	stUpgrade                // after an upgrade request, until its answer
	stPass                   // not HTTP/1.x framing: everything passes
	stRefused                // a head refused: its stand-in given, the rest dropped
	stDead                   // a body broken: every read fails
	stLent                   // lent to the relay (lend): net/http's reads fail until it is back
)

// errRefused fails the reads of a refused connection: a *net.OpError of
// "read", which net/http takes for a client gone and answers nothing.
var errRefused = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("request refused by slotgate's strict framing")}

// errLent fails net/http's reads of a connection lent to the relay, as
// errRefused does: net/http then closes it without a word (lend).
var errLent = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection lent to the stream relay")}

var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// strictConn frames one connection's requests. Reads are never concurrent
// (net/http's background read and its request reads take turns), but a
// write (the answer to an upgrade) may come from another goroutine: mu
// guards the stage for it.
type strictConn struct {
	net.Conn
	// sock reads and writes the socket raw (rawio.Socket): the proxy
	// port's reads and writes are most of its system calls. Not Usable:
	// Conn's own Read and Write.
	sock    rawio.Socket
	maxHead int
	bufs    *sync.Pool // of *[]byte of inBufSize
	pooled  *[]byte    // where in came from, to go back to bufs

	in    []byte // read from the socket and not yet given to net/http
	ready int    // in[:ready] is checked and may be given
	scan  int    // in[:scan] is framed
	left  int64  // bytes left of a body or a chunk
	head  head   // the head being read
	// afterPost says the last request line was a POST's: net/http then
	// drops up to 4 CR or LF bytes before the next request line (old
	// clients end a POST body with a CRLF), and so does the framing;
	// skipped counts those dropped before the head being read.
	afterPost bool
	skipped   int

	mu sync.Mutex
	st stage

	earlyState
}

// head is what a request head says about its framing.
type head struct {
	lines              int
	http10             bool
	contentLength      int64
	lengths, encodings int
	chunked            bool
	upgrade            bool
	bad                string // why the head is refused; "" when it is not
	// held says the request line was held back with the rest of the
	// head, for an early answer: start is where the head begins in in.
	held  bool
	start int
}

func (c *strictConn) stage() stage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *strictConn) setStage(s stage) {
	c.mu.Lock()
	c.st = s
	c.mu.Unlock()
}

func (c *strictConn) Read(p []byte) (int, error) {
	if c.watched() {
		if err := c.holdNext(p); err != nil {
			return 0, err
		}
	}
	for {
		if c.ready > 0 {
			n := copy(p, c.in[:c.ready])
			c.in = c.in[:copy(c.in, c.in[n:])]
			c.ready -= n
			c.scan -= n
			if len(c.in) == 0 {
				c.freeIn()
			}
			return n, nil
		}
		st := c.stage()
		switch st {
		case stDead:
			return 0, errRefused
		case stLent:
			return 0, errLent
		case stRefused:
			return 0, c.drain()
		case stPass, stUpgrade, stBody, stChunkData:
			if len(c.in) == 0 {
				return c.readThrough(p, st)
			}
		}
		c.frame()
		if st := c.stage(); c.ready > 0 || st == stDead || st == stRefused || st == stLent {
			continue
		}
		if err := c.fill(p); err != nil {
			return 0, err
		}
	}
}

// readThrough reads a body or a passed-through stream straight into p.
func (c *strictConn) readThrough(p []byte, st stage) (int, error) {
	if (st == stBody || st == stChunkData) && int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.read(p)
	if st == stBody || st == stChunkData {
		c.left -= int64(n)
		if c.left == 0 {
			c.bodyDone(st)
		}
	}
	return n, err
}

// inBufSize is the size of a connection's read buffer.
const inBufSize = 4096

// freeIn gives an empty in back to the pool.
func (c *strictConn) freeIn() {
	if c.pooled != nil && cap(c.in) == inBufSize {
		*c.pooled = c.in[:0]
		c.bufs.Put(c.pooled)
	}
	c.in, c.pooled = nil, nil
}

// fill reads more of the socket into in. With in empty, it takes a
// buffer of its own only once bytes came: an idle or queued connection,
// waiting in a read, then holds none. A raw socket reads into a pooled
// buffer taken for each try (rawio.Socket.ReadPooled); another waits in
// the caller's p. Reading into p first would split a request between two
// reads when p is small, as net/http's first read of a connection is
// (its peek at 14 bytes for HTTP/2's preface), and early answers are
// written in that read for as long as the connection lives.
func (c *strictConn) fill(p []byte) error {
	if c.in == nil && c.sock.Usable() {
		pb, err := c.sock.ReadPooled(c.bufs)
		if pb == nil {
			return err
		}
		c.pooled, c.in = pb, *pb
		return nil
	}
	if len(c.in) == 0 {
		n, err := c.read(p)
		if n == 0 {
			return err
		}
		if c.in == nil {
			c.pooled = c.bufs.Get().(*[]byte)
			c.in = *c.pooled
		}
		c.in = append(c.in, p[:n]...)
		return nil
	}
	if len(c.in) == cap(c.in) {
		c.in = append(c.in, make([]byte, max(inBufSize, len(c.in)))...)[:len(c.in)]
	}
	n, err := c.read(c.in[len(c.in):cap(c.in)])
	c.in = c.in[:len(c.in)+n]
	if n > 0 {
		return nil
	}
	return err
}

// frame frames what in holds beyond scan, moving ready forward over what
// may go to net/http.
func (c *strictConn) frame() {
	for {
		st := c.stage()
		switch st {
		case stPreface:
			if !c.preface() {
				return
			}
		case stPass, stUpgrade:
			c.scan, c.ready = len(c.in), len(c.in)
			return
		case stBody, stChunkData:
			n := min(int64(len(c.in)-c.scan), c.left)
			c.scan += int(n)
			c.ready, c.left = c.scan, c.left-n
			if c.left > 0 {
				return
			}
			c.bodyDone(st)
		case stDead, stRefused, stLent:
			return
		default:
			if !c.line(st) {
				return
			}
		}
	}
}

// preface decides whether a connection opens with HTTP/2's preface; it
// returns false while it cannot tell yet.
func (c *strictConn) preface() bool {
	n := min(len(c.in), len(h2Preface))
	if !bytes.Equal(c.in[:n], h2Preface[:n]) {
		c.setStage(stHead)
		return true
	}
	if n < len(h2Preface) {
		return false
	}
	c.setStage(stPass)
	return true
}

// line frames one line, in a head, a chunk-size line or a trailer; it
// returns false while the line is not whole.
func (c *strictConn) line(st stage) bool {
	if st == stHead && c.head.lines == 0 && c.afterPost {
		c.skipBlank()
	}
	i := bytes.IndexByte(c.in[c.scan:], '\n')
	if i < 0 {
		if st == stHead && len(c.in) > c.maxHead {
			c.refuse(http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large", "header_too_large")
		} else if st != stHead && len(c.in)-c.scan > c.maxHead {
			c.fail()
		}
		return false
	}
	line := c.in[c.scan : c.scan+i+1]
	c.scan += i + 1
	if st == stHead && c.scan > c.maxHead {
		c.refuse(http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large", "header_too_large")
		return false
	}
	ok := len(line) >= 2 && line[len(line)-2] == '\r' && bytes.IndexByte(line[:len(line)-2], '\r') < 0
	if !ok && st == stHead {
		c.refuse(http.StatusBadRequest, "Malformed request: a line does not end in CRLF", "bad_request")
		return false
	}
	if !ok {
		c.fail()
		return false
	}
	c.frameLine(st, line[:len(line)-2])
	return true
}

// skipBlank drops the CR and LF bytes, 4 at most, that come before a
// request line after a POST, as net/http's server does (it peeks 4 bytes
// and discards the leading ones): what it drops is never given.
func (c *strictConn) skipBlank() {
	for c.skipped < 4 && c.scan < len(c.in) && (c.in[c.scan] == '\r' || c.in[c.scan] == '\n') {
		c.in = append(c.in[:c.scan], c.in[c.scan+1:]...)
		c.skipped++
	}
}

// frameLine takes one line, CRLF removed.
func (c *strictConn) frameLine(st stage, line []byte) {
	switch st {
	case stHead:
		c.headLine(line)
	case stChunkSize:
		n, ok := chunkSize(line)
		switch {
		case !ok:
			c.fail()
		case n == 0:
			c.ready = c.scan
			c.setStage(stTrailer)
		default:
			c.ready, c.left = c.scan, n
			c.setStage(stChunkData)
		}
	case stChunkEnd:
		if len(line) != 0 {
			c.fail()
			return
		}
		c.ready = c.scan
		c.setStage(stChunkSize)
	case stTrailer:
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			c.fail()
			return
		}
		c.ready = c.scan
		if len(line) == 0 {
			c.setStage(c.afterBody())
		}
	}
}

// bodyDone moves on once a body or a chunk was passed through.
func (c *strictConn) bodyDone(st stage) {
	if st == stChunkData {
		c.setStage(stChunkEnd)
		return
	}
	c.setStage(c.afterBody())
}

func (c *strictConn) afterBody() stage {
	if c.head.upgrade {
		return stUpgrade
	}
	return stHead
}

// fail ends a connection whose chunked body broke the rules. What was
// checked goes through, then a line that net/http's chunked reader
// refuses in any of the places it can come (a chunk size, the CRLF after a
// chunk, a trailer line), then an empty line, so that net/http's look
// ahead for a trailer's end reads no further: the body's read fails as a
// malformed body, and every read after it fails. A read error instead would look to
// net/http like a client gone: it cancels the request's context, and the
// proxy would answer nothing.
func (c *strictConn) fail() {
	c.in = append(c.in[:c.ready], poison...)
	c.ready, c.scan = len(c.in), len(c.in)
	c.setStage(stDead)
}

var poison = []byte("x\r\n\r\n")

// chunkSize parses a chunk-size line: hex digits, then an extension
// after ';' that is ignored, as net/http does.
func chunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	return n, err == nil && n >= 0
}

// refuse hands net/http, in place of a refused head, a head of its own
// that proxy.Strict answers with status and message (proxy.RefusedHeader),
// and closes the connection after. The answer so goes through net/http,
// after the answers to the requests before it on the connection: written
// here, it could cut into an answer net/http is writing, or answer a
// pipelined request that came before. The bytes of the refused head and
// everything after it are never given to net/http.
func (c *strictConn) refuse(status int, message, reason string) {
	synthetic := make([]byte, 0, 128+len(message))
	if c.head.lines == 0 || c.head.held { // its request line was not given: one of its own
		synthetic = append(synthetic, "GET / HTTP/1.1\r\n"...)
	}
	synthetic = append(synthetic, "Host: slotgate\r\n"+proxy.RefusedHeader+": "...)
	synthetic = strconv.AppendInt(synthetic, int64(status), 10)
	synthetic = append(synthetic, ' ')
	synthetic = append(synthetic, reason...)
	synthetic = append(synthetic, ' ')
	synthetic = append(synthetic, message...)
	synthetic = append(synthetic, "\r\nConnection: close\r\n\r\n"...)
	c.in = append(c.in[:c.ready], synthetic...)
	c.ready, c.scan = len(c.in), len(c.in)
	c.setStage(stRefused)
}

// drain reads and drops what the client sends after a refused head, until
// the read fails: the client left, or net/http, done with the refusal,
// cut the read short.
func (c *strictConn) drain() error {
	var sink [512]byte
	for {
		if _, err := c.Conn.Read(sink[:]); err != nil {
			return err
		}
	}
}

func (c *strictConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.st == stUpgrade {
		// The answer to the upgrade request: switched, the connection is
		// a tunnel; otherwise nothing more is read from it.
		if bytes.HasPrefix(p, []byte("HTTP/1.1 101 ")) || bytes.HasPrefix(p, []byte("HTTP/1.0 101 ")) {
			c.st = stPass
		} else {
			c.st = stDead
		}
	}
	c.mu.Unlock()
	return c.write(p)
}

// read reads the socket, raw where it can.
func (c *strictConn) read(p []byte) (int, error) {
	if c.sock.Usable() {
		return c.sock.Read(p)
	}
	return c.Conn.Read(p)
}

// write writes the socket, raw where it can.
func (c *strictConn) write(p []byte) (int, error) {
	if c.sock.Usable() {
		return c.sock.Write(p)
	}
	return c.Conn.Write(p)
}

// SyscallConn exposes the socket, for proxy.ConnContext's peer check.
func (c *strictConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// headLine takes one line of a head: the request line goes to net/http at
// once; header lines are held, and checked when the empty line ends the
// head.
func (c *strictConn) headLine(line []byte) {
	h := &c.head
	if h.lines == 0 {
		*h = head{lines: 1, http10: bytes.HasSuffix(line, []byte(" HTTP/1.0"))}
		c.afterPost, c.skipped = bytes.HasPrefix(line, []byte("POST ")), 0
		if c.mayHold(len(line)) {
			h.held, h.start = true, c.scan-len(line)-2
			return
		}
		c.ready = c.scan
		c.give()
		return
	}
	h.lines++
	if len(line) == 0 {
		c.endHead()
		return
	}
	if line[0] == ' ' || line[0] == '\t' {
		h.note("obsolete line folding")
		return
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok || !httpsyntax.Token(name) {
		h.note("a malformed header line")
		return
	}
	value = bytes.Trim(value, " \t")
	switch {
	case httpsyntax.EqualFold(name, "content-length"):
		h.lengths++
		n, ok := httpsyntax.Decimal(value)
		if !ok {
			h.note("an invalid Content-Length")
		}
		h.contentLength = n
	case httpsyntax.EqualFold(name, "transfer-encoding"):
		h.encodings++
		h.chunked = httpsyntax.EqualFold(value, "chunked")
	case httpsyntax.EqualFold(name, "upgrade"):
		h.upgrade = h.upgrade || !httpsyntax.ListOf(value, "h2c")
	}
}

func (h *head) note(why string) {
	if h.bad == "" {
		h.bad = why
	}
}

// endHead checks a whole head and lets it go to net/http, or refuses it.
func (c *strictConn) endHead() {
	h := &c.head
	switch {
	case h.bad != "":
	case h.lengths > 1:
		h.bad = "more than one Content-Length"
	case h.encodings > 0 && h.lengths > 0:
		h.bad = "both Transfer-Encoding and Content-Length"
	case h.encodings > 1 || h.encodings == 1 && !h.chunked:
		h.bad = `a Transfer-Encoding other than "chunked"`
	case h.encodings > 0 && h.http10:
		h.bad = "Transfer-Encoding on HTTP/1.0"
	case h.upgrade && (h.chunked || h.contentLength > 0):
		h.bad = "an upgrade with a body"
	}
	if h.bad != "" {
		c.refuse(http.StatusBadRequest, "Malformed request: "+h.bad, "bad_request")
		return
	}
	if h.held && c.answerEarly() {
		return
	}
	if h.held {
		c.give()
	}
	c.ready = c.scan
	h.lines = 0
	switch {
	case h.chunked:
		c.setStage(stChunkSize)
	case h.contentLength > 0:
		c.left = h.contentLength
		c.setStage(stBody)
	default:
		c.setStage(c.afterBody())
	}
}

// MoveOut lends the socket to the stream relay, out of Go's netpoller
// (relay.Mover): net/http let the connection go (a hijack), and nothing
// calls it until MoveIn.
func (c *strictConn) MoveOut() (int, error) {
	fd, err := rawio.MoveOut(c.Conn)
	if err == nil {
		c.Conn, c.sock = rawio.Moved(), rawio.Socket{} // the closed one goes
	}
	return fd, err
}

// MoveIn gives the socket back once the relay carried its answer: the
// connection works on it again, as itself, for net/http to serve again
// (proxy.Resume). On failure it stays on rawio.Moved, and its next read
// fails.
func (c *strictConn) MoveIn(fd int) (net.Conn, error) {
	nc, err := rawio.MoveIn(fd)
	if err != nil {
		return nil, err
	}
	c.Conn, c.sock = nc, rawio.NewSocket(nc)
	c.idleUntil.Store(0) // the new connection has no deadline yet
	return c, nil
}
