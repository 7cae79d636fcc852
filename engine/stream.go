package engine

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// streamBuf is the most of a request body the hand-written path holds at
// once while it streams the body to the engine, head and first bytes in
// its first write, as HAProxy streams one through its 16 KiB buffers: a
// body read as it is sent (a long prompt, admitted at once), or one in
// memory too large for a pooled buffer. Copied whole, 256 prompts of 32
// KiB arriving together grew the heap by some 40 KiB a stream, resident
// long after their bodies were sent (BENCHMARKS.md).
const streamBuf = 16 << 10

// streamWriters are the buffers bodies stream through, taken for one
// write and put back at once: an idle connection holds none.
var streamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, streamBuf) }}

// writeStreamed writes req through a pooled buffer of streamBuf: the
// head, then the body as it is read. The caller closes the body
// (roundTripStreamed): one the look finds the connection closed before is
// sent on another.
func (ec *conn) writeStreamed(req *http.Request, peek bool) error {
	body := req.Body
	if err := ec.look(peek); err != nil {
		return err
	}
	bw := streamWriters.Get().(*bufio.Writer)
	// sockWriter has no ReadFrom: bufio reads the body into its own
	// buffer, where net.TCPConn's ReadFrom would copy through a 32 KiB
	// buffer of its own, allocated a call.
	bw.Reset(sockWriter{ec})
	defer func() {
		bw.Reset(nil)
		streamWriters.Put(bw)
	}()
	n := req.ContentLength
	head, ok := appendHead(bw.AvailableBuffer(), req, n)
	if !ok {
		if err := req.Write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	_, _ = bw.Write(head) // bufio reports a write's error at Flush, or in ReadFrom
	if _, err := io.CopyN(bw, body, n); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// As serialize: a body longer than its length is refused, not cut.
	if k, _ := body.Read(bw.AvailableBuffer()[:1]); k > 0 {
		return fmt.Errorf("engine: request body longer than its ContentLength %d", n)
	}
	return nil
}

// sockWriter writes to the connection's socket, raw where it can be,
// all of each write or an error. Unlike writeWait, it does not wait for
// the answer: more of the request may follow.
type sockWriter struct{ ec *conn }

func (w sockWriter) Write(b []byte) (int, error) {
	if w.ec.sock.Usable() {
		return w.ec.sock.Write(b)
	}
	return w.ec.c.Write(b)
}
