package proxy

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/load/inflight"
)

// recorder is the state of one request. It wraps the client's
// ResponseWriter to learn the status, the bytes written and the time of the
// first byte, and carries the outcome chosen by whichever part of the proxy
// ends the request. One is allocated per request.
type recorder struct {
	http.ResponseWriter
	id        string
	start     time.Time
	queued    bool
	queueWait time.Duration
	status    int
	bytes     int64
	firstByte time.Time
	writeErr  error
	outcome   Outcome
	// bodyPending is set while an HTTP/1.x request body may still be
	// unread on the connection and may not have arrived; an answer of
	// slotgate's own then closes the connection (see answer.write).
	bodyPending bool
	// admitted is set once the request holds a slot.
	admitted bool
	// bytesIn is the request body's size: declared, or read while queued
	// (-1 when unknown).
	bytesIn int64
	// body is the request body when it is held in memory (read while
	// queued, or a small one read at admission); nil when it streams.
	body []byte
	// bodyErr is the first error reading a forwarded request body: the
	// client's fault, not the engine's. Written by the transport's
	// goroutine, read by the handler after the round trip ended.
	bodyErr atomic.Pointer[error]
	// flight is the request's load as slotgate counts it, from its slot
	// to the slot's release; nil when untracked.
	flight *inflight.Flight
	// class is the request's policy class, for the metrics.
	class string
	// adm is the request as its classifier saw it, once classified; nil
	// without an admission policy. Its lifecycle events follow it.
	adm *admission.Request
	// promptTokens is the prompt estimate once the body has passed
	// (written by the transport's goroutine), for the context size.
	promptTokens atomic.Int64
}

// watchedBody records the first read error of a forwarded request body,
// so that a broken upload is not blamed on the engine.
type watchedBody struct {
	io.ReadCloser
	rec *recorder
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.rec.bodyErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.firstByte.IsZero() {
		r.firstByte = time.Now()
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	if err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	return n, err
}

// FlushError lets http.ResponseController (used by httputil.ReverseProxy)
// flush through the wrapper; streaming depends on it.
func (r *recorder) FlushError() error {
	err := http.NewResponseController(r.ResponseWriter).Flush()
	if err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	return err
}

// Unwrap exposes the underlying writer to http.ResponseController, for read
// deadlines and full duplex.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// clientGone reports whether the client left: its context ended or a write
// to it failed.
func (r *recorder) clientGone(req *http.Request) bool {
	return req.Context().Err() != nil || r.writeErr != nil
}
