package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// conn is one keep-alive connection of the hand-written path.
type conn struct {
	c    net.Conn
	idle time.Time     // when it went back to the pool
	read headCounter   // under br: what the engine sent for this request
	br   *bufio.Reader // while an answer is read (reader); nil otherwise
	// wrote is set once the current request was written whole: from
	// then on the engine may have it.
	wrote bool
	// peek asks the next write to look for the engine's close first: the
	// connection sat in the pool, and its request may not be sent again.
	peek bool
	sock rawio.Socket // the socket worked raw, when Usable
	// parts, during an exchange, are where its answer is read into.
	parts *answerParts
}

func newConn(c net.Conn) *conn {
	ec := &conn{}
	ec.setConn(c)
	return ec
}

// setConn makes c the connection's socket: at first, and when a relay
// gives it back (Detached.MoveIn).
func (ec *conn) setConn(c net.Conn) {
	ec.c, ec.sock = c, rawio.NewSocket(c)
	ec.read.r = c
	if ec.sock.Usable() {
		ec.read.r = &ec.sock // the answer's reads, raw
	}
}

// readBufSize is a connection's read buffer: an answer's head, usually
// whole, and the body's first bytes.
const readBufSize = 4 << 10

// readers are the connections' read buffers. A connection holds one only
// while it reads an answer, from its request's send to the body's end or
// Detach: an idle pooled connection and a relayed stream hold none, and a
// stream's buffer serves the next connection instead of becoming garbage
// (three 4 KiB buffers a stream were most of what a burst of streams
// opening allocates; BENCHMARKS.md).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// reader returns the connection's read buffer, taking one if it holds
// none.
func (ec *conn) reader() *bufio.Reader {
	if ec.br == nil {
		ec.br = readers.Get().(*bufio.Reader)
		ec.br.Reset(&ec.read)
	}
	return ec.br
}

// dropReader gives the read buffer back, once nothing reads it: what it
// still buffered is dropped.
func (ec *conn) dropReader() {
	if ec.br != nil {
		ec.br.Reset(nil)
		readers.Put(ec.br)
		ec.br = nil
	}
}

// send writes a request and reads the head of its final answer, failing
// once the heads read, interim ones included, pass maxHead bytes. The
// request is req or, with req nil, raw: one the caller wrote whole, head
// and body, never HEAD (SendRaw).
func (ec *conn) send(req *http.Request, raw []byte, maxHead int64) (*http.Response, error) {
	// Count from the write on: what was read of an answer, and whether
	// the request went out whole, say whether it may be sent again
	// (staleConn).
	ec.read.start(maxHead)
	defer ec.read.unlimit()
	ec.wrote = false
	peek := ec.peek
	ec.peek = false
	var err error
	if req != nil {
		err = ec.write(req, peek)
	} else {
		err = ec.writeWait(raw, peek)
	}
	if err != nil {
		return nil, fmt.Errorf("write engine request: %w", err)
	}
	ec.wrote = true
	for {
		resp, err := readAnswer(ec.reader(), req, ec.parts)
		if err != nil {
			return nil, fmt.Errorf("read engine answer: %w", err)
		}
		if resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer (100, 103): the final one follows
		}
		return resp, nil
	}
}

// write sends req: in one write, headers and body together, so that the
// engine reads them at once; or, a body read as it is sent (onceBody) or
// one too large for a pooled buffer, through a buffer of StreamBuf
// (writeStreamed), so that a long prompt is never copied whole. With
// peek, it looks for the engine's close first.
func (ec *conn) write(req *http.Request, peek bool) error {
	if _, once := req.Body.(*onceBody); once || req.ContentLength > maxPooledBuf {
		return ec.writeStreamed(req, peek)
	}
	buf := writeBufs.Get().(*bytes.Buffer)
	defer putWriteBuf(buf)
	if err := serialize(buf, req); err != nil {
		return err
	}
	return ec.writeWait(buf.Bytes(), peek)
}

// look, with peek, looks for the engine's close before a write: a
// connection the engine closed fails with errEngineClosed.
func (ec *conn) look(peek bool) error {
	if peek && PeerClosed(ec.c) {
		return errEngineClosed
	}
	return nil
}

// requestWriter is what serialize writes a request into: a pooled
// bytes.Buffer, sent whole (write), or a bufio.Writer on the socket, for
// a body that streams (writeStreamed).
type requestWriter interface {
	io.Writer
	AvailableBuffer() []byte
}

// serialize writes req, head and body, into w: by appendHead where it
// can, else by Request.Write.
func serialize(w requestWriter, req *http.Request) error {
	body := req.Body
	if body == http.NoBody {
		body = nil
	}
	var n int64
	if body != nil {
		n = req.ContentLength
	}
	head, ok := appendHead(w.AvailableBuffer(), req, n)
	if !ok || n < 0 || body != nil && n == 0 || req.Body == nil && req.ContentLength != 0 {
		return req.Write(w)
	}
	_, _ = w.Write(head) // a buffer's: a bufio.Writer reports a failure in what follows
	if body == nil {
		return nil
	}
	defer body.Close()
	if _, err := io.CopyN(w, body, n); err != nil {
		return err
	}
	// Request.Write refuses a body longer than its length rather than
	// cut it: so does this path. The probe reads into w's spare room, not
	// kept: a byte array of its own would be allocated (it escapes
	// through the Read call) for every request with a body.
	probe, err := spareByte(w)
	if err != nil {
		return err
	}
	if k, _ := body.Read(probe); k > 0 {
		return fmt.Errorf("engine: request body longer than its ContentLength %d", n)
	}
	return nil
}

// spareByte returns one byte of w's spare room: a buffer grown by one, or
// a bufio.Writer flushed when full.
func spareByte(w requestWriter) ([]byte, error) {
	switch w := w.(type) {
	case *bytes.Buffer:
		w.Grow(1)
	case *bufio.Writer:
		if w.Available() == 0 {
			if err := w.Flush(); err != nil {
				return nil, err
			}
		}
	}
	return w.AvailableBuffer()[:1], nil
}

// writeBufs holds the buffers requests are serialised in. A pool rather
// than a buffer per connection: a thousand idle connections then hold no
// write buffer at all.
var writeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf bounds the buffers kept for reuse, so that one request
// with huge headers does not pin their memory.
const maxPooledBuf = 256 << 10

func putWriteBuf(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBuf {
		return
	}
	buf.Reset()
	writeBufs.Put(buf)
}

// headCounter counts the bytes of an answer read through it and, while
// its head is read, stops at a limit.
type headCounter struct {
	r     io.Reader
	n     int64 // bytes of this exchange's answer read
	limit int64 // while > 0: n may not pass it
}

// start begins an exchange: n counts from 0, up to limit.
func (h *headCounter) start(limit int64) { h.n, h.limit = 0, limit }

// unlimit lifts the limit once the head was read: a body has none.
func (h *headCounter) unlimit() { h.limit = 0 }

func (h *headCounter) Read(p []byte) (int, error) {
	if h.limit > 0 {
		left := h.limit - h.n
		if left <= 0 {
			return 0, fmt.Errorf("engine response head larger than %d bytes", h.limit)
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := h.r.Read(p)
	h.n += int64(n)
	return n, err
}
