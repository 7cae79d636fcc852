package engine

import (
	"bufio"
	"net/http"
	"sync"
)

// StreamBuf is the most of a request body the hand-written path holds at
// once while it streams the body to the engine, head and first bytes in
// its first write, as HAProxy streams one through its 16 KiB buffers: a
// body read as it is sent (a long prompt, admitted at once), or one in
// memory too large for a pooled buffer. Copied whole, 256 prompts of 32
// KiB arriving together grew the heap by some 40 KiB a stream, resident
// long after their bodies were sent (BENCHMARKS.md).
const StreamBuf = 16 << 10

// streamWriters are the buffers bodies stream through, taken for one
// write and put back at once: an idle connection holds none.
var streamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, StreamBuf) }}

// writeStreamed writes req through a pooled buffer of StreamBuf: the
// head, then the body as it is read (serialize). The look for the
// engine's close comes first, before a byte of the body is read, so that
// a body that streams is sent on another connection when this one was
// closed.
func (ec *conn) writeStreamed(req *http.Request, peek bool) error {
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
	if err := serialize(bw, req); err != nil {
		return err
	}
	return bw.Flush()
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
