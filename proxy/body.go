package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
)

// bodyWatch is the gate.Watch of an HTTP request: it reads the request's
// body while the request waits, up to the body limit and as far as the
// proxy's budget for such bodies allows. net/http notices a client that
// closed its connection only once the body was read to its end, so
// reading it lets a client that leaves the queue be removed at once, and
// never forwarded. The handler owns the read: the gate always settles a
// watch it started before Admit returns.
type bodyWatch struct {
	ex   *exchange
	done chan struct{}
	// Written by the read, read by the handler once done is closed.
	buf   []byte // what was read: the whole body, or its first bytes
	whole bool   // buf is the whole body
	held  int64  // bytes taken from the budget, given back at finish
	err   error
}

// budgetStep is how much of a body of unknown length (chunked) is taken
// from the budget at a time.
const budgetStep = 64 << 10

// Start begins the read on a goroutine of its own. A read that fails or
// passes the limit ends the wait through fail.
func (b *bodyWatch) Start(fail func(error)) {
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		b.err = b.read()
		if b.err != nil {
			fail(fmt.Errorf("read queued body: %w", b.err))
		}
	}()
}

// read reads the body into buf while the budget allows: a body of known
// length whole or not at all, one of unknown length a step at a time, as
// far as the budget lets it. What it leaves unread stays on the
// connection, to stream to the engine once the request is admitted.
func (b *bodyWatch) read() error {
	in, budget := b.ex.in, b.ex.p.budget
	if n := in.ContentLength; n >= 0 {
		if !b.take(budget, n) {
			return nil
		}
		b.buf = make([]byte, n)
		_, err := io.ReadFull(in.Body, b.buf)
		b.whole = err == nil
		return b.readError(err)
	}
	max := b.ex.p.maxBody
	for {
		if int64(len(b.buf)) > max {
			return gate.ErrTooLarge
		}
		step := min(budgetStep, max+1-int64(len(b.buf)))
		if !b.take(budget, step) {
			return nil
		}
		b.buf = slices.Grow(b.buf, int(step))
		n, err := io.ReadFull(in.Body, b.buf[len(b.buf):len(b.buf)+int(step)])
		b.buf = b.buf[:len(b.buf)+n]
		budget.give(step - int64(n))
		b.held -= step - int64(n)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			b.whole = int64(len(b.buf)) <= max
		case err != nil:
			return b.readError(err)
		default:
			continue
		}
		if !b.whole {
			return gate.ErrTooLarge
		}
		return nil
	}
}

// take reserves n bytes of the budget for the body.
func (b *bodyWatch) take(budget *bodyBudget, n int64) bool {
	if !budget.take(n) {
		return false
	}
	b.held += n
	return true
}

// readError is err as the gate should see it: a deadline error once the
// body's own deadline has passed is the body timeout, even when the read
// was cut short meanwhile (the deadline ends the request's context too,
// which the gate may see first and cut the read for).
func (b *bodyWatch) readError(err error) error {
	if b.ex.late(err) {
		return fmt.Errorf("%w: %w", gate.ErrBodyTimeout, err)
	}
	return err
}

// Settle waits for the read to end; when the request is refused (cut), it
// ends the read at once rather than wait for a slow client.
func (b *bodyWatch) Settle(cut bool) error {
	if cut && !b.finished() {
		_ = http.NewResponseController(&b.ex.out).SetReadDeadline(time.Now())
	}
	<-b.done
	// A body read to its end leaves nothing on the connection; one whose
	// read failed, was cut short or did not fit the budget may leave
	// anything.
	b.ex.bodyPending = !b.whole && b.ex.in.ProtoMajor == 1
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
// is answered as the client's fault rather than the engine's. read is
// what was read of it while the request waited, sent first.
func (ex *exchange) streamBody(read []byte) {
	r := ex.r
	if r.ContentLength == 0 {
		return
	}
	var body io.ReadCloser = r.Body
	if r.ContentLength < 0 {
		body = http.MaxBytesReader(&ex.out, body, ex.p.maxBody-int64(len(read)))
	}
	if len(read) > 0 {
		body = prefixedBody{io.MultiReader(bytes.NewReader(read), body), body}
	}
	out := new(http.Request)
	*out = *r
	out.Body = &watchedBody{ReadCloser: body, ex: ex}
	ex.r = out
}

// prefixedBody is a body whose first bytes were read while its request
// waited.
type prefixedBody struct {
	io.Reader
	io.Closer
}

// watchedBody records the first read error of a forwarded request body,
// so that a broken upload is not blamed on the engine, and its end.
type watchedBody struct {
	io.ReadCloser
	ex *exchange
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.ex.bodyEnded.Store(true)
	case err != nil:
		b.ex.bodyErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

// startBodyClock gives the request's body --request-body-timeout to
// arrive, counted from its headers, through the connection's read
// deadline: a slow upload then fails its reads, and its request is
// answered 408 with its slot handed on. A request without a body has
// nothing to wait for. The deadline needs no lifting once the body has
// arrived: net/http's HTTP/1 server lifts it itself as the body ends
// (before it reads on in the background to notice the client leave), and
// HTTP/2's applies it to the body only (TestRequestBodyTimeoutSparesLongAnswers).
func (ex *exchange) startBodyClock() {
	t := ex.p.bodyTimeout
	if t <= 0 || ex.in.ContentLength == 0 {
		return
	}
	ex.bodyClock, ex.bodyDeadline = true, ex.Start.Add(t)
	_ = http.NewResponseController(&ex.out).SetReadDeadline(ex.bodyDeadline)
}

// late reports whether err, a read of the body, failed on the body's own
// deadline: a deadline error once that deadline has passed.
func (ex *exchange) late(err error) bool {
	return err != nil && isTimeout(err) && ex.bodyClock && !time.Now().Before(ex.bodyDeadline)
}

// bodyTimedOut reports whether the body's deadline passed before it
// arrived.
func (ex *exchange) bodyTimedOut() bool {
	err := ex.bodyErr.Load()
	return err != nil && ex.late(*err)
}
