package proxy

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
)

// bodyWatch is the gate.Watch of an HTTP request: it reads the request's
// body while the request waits, up to the body limit. net/http notices a
// client that closed its connection only once the body was read to its
// end, so reading it lets a client that leaves the queue be removed at
// once, and never forwarded. The handler owns the read: the gate always
// settles a watch it started before Admit returns.
type bodyWatch struct {
	ex   *exchange
	done chan struct{}
	buf  []byte
	err  error
}

// Start begins the read on a goroutine of its own. A read that fails or
// passes the limit ends the wait through fail.
func (b *bodyWatch) Start(fail func(error)) {
	b.done = make(chan struct{})
	body, max := b.ex.in.Body, b.ex.p.maxBody
	go func() {
		defer close(b.done)
		limit := max
		if limit < math.MaxInt64 {
			limit++ // one byte more tells "at the limit" from "over it"
		}
		b.buf, b.err = io.ReadAll(io.LimitReader(body, limit))
		if b.err == nil && int64(len(b.buf)) > max {
			b.err = gate.ErrTooLarge
		}
		if b.err != nil {
			fail(fmt.Errorf("read queued body: %w", b.err))
		}
	}()
}

// Settle waits for the read to end; when the request is refused (cut), it
// ends the read at once rather than wait for a slow client.
func (b *bodyWatch) Settle(cut bool) error {
	if cut && !b.finished() {
		_ = http.NewResponseController(&b.ex.out).SetReadDeadline(time.Now())
	}
	<-b.done
	// A body read to its end leaves nothing on the connection; one whose
	// read failed or was cut short may leave anything.
	b.ex.bodyPending = b.err != nil && b.ex.in.ProtoMajor == 1
	return b.err
}

// Gone reports whether the client's connection was closed by the peer.
func (b *bodyWatch) Gone() bool { return clientLeft(b.ex.in) }

func (b *bodyWatch) finished() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// holdBody makes buf, the whole request body, the body forwarded, held in
// memory: r becomes a shallow copy with a known length and a GetBody, so
// that the transport may resend it on a stale keep-alive connection.
func (ex *exchange) holdBody(buf []byte) {
	ex.body, ex.bytesIn = buf, int64(len(buf))
	out := engine.WithBody(ex.r, buf)
	out.ContentLength = int64(len(buf))
	out.TransferEncoding = nil
	ex.r = out
}

// streamBody wraps the body of a request that streams to the engine:
// bounded when its length is unknown, and watched so that a broken upload
// is answered as the client's fault rather than the engine's.
func (ex *exchange) streamBody() {
	r := ex.r
	if r.ContentLength == 0 {
		return
	}
	body := r.Body
	if r.ContentLength < 0 {
		body = http.MaxBytesReader(&ex.out, body, ex.p.maxBody)
	}
	out := new(http.Request)
	*out = *r
	out.Body = &watchedBody{ReadCloser: body, ex: ex}
	ex.r = out
}

// watchedBody records the first read error of a forwarded request body,
// so that a broken upload is not blamed on the engine.
type watchedBody struct {
	io.ReadCloser
	ex *exchange
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.ex.bodyErr.CompareAndSwap(nil, &err)
	}
	return n, err
}
