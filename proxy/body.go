package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
)

// errBodyTooLarge ends a queue wait whose request body passed the limit.
var errBodyTooLarge = errors.New("request body too large")

// queuedBody reads a queued request's body while the request waits. It is
// owned by the handler, which always waits for done before returning.
type queuedBody struct {
	done chan struct{}
	buf  []byte
	err  error
}

// readQueuedBody starts reading body, up to max bytes. A read that fails or
// passes max cancels the wait through cancel, with the reason as cause.
func readQueuedBody(body io.Reader, max int64, cancel context.CancelCauseFunc) *queuedBody {
	q := &queuedBody{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		limit := max
		if limit < math.MaxInt64 {
			limit++ // one byte more tells "at the limit" from "over it"
		}
		q.buf, q.err = io.ReadAll(io.LimitReader(body, limit))
		if q.err == nil && int64(len(q.buf)) > max {
			q.err = errBodyTooLarge
		}
		if q.err != nil {
			cancel(fmt.Errorf("read queued body: %w", q.err))
		}
	}()
	return q
}

// finished reports whether the read has ended.
func (q *queuedBody) finished() bool {
	select {
	case <-q.done:
		return true
	default:
		return false
	}
}

// withBody returns a shallow copy of r that sends buf as its body, with a
// known length and a GetBody so the transport may retry on a stale
// keep-alive connection.
func withBody(r *http.Request, buf []byte) *http.Request {
	out := new(http.Request)
	*out = *r
	out.ContentLength = int64(len(buf))
	out.TransferEncoding = nil
	out.Body = io.NopCloser(bytes.NewReader(buf))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	if len(buf) == 0 {
		out.Body = http.NoBody
	}
	return out
}

// lazyBody starts reading a request's body when the request has to wait,
// at most once. start may be called from the limiter's OnQueued or from
// the classifier's deferral timer, on another goroutine; get returns the
// read, or nil when none was started.
type lazyBody struct {
	body   io.Reader
	max    int64
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	q         *queuedBody
	timerDone bool // the deferral timer may no longer start the read
}

// start begins the read unless it has begun.
func (l *lazyBody) start() { l.begin(true) }

// startDeferred is the deferral timer's start: it does nothing once
// stopTimer was called, so a timer that fires late cannot start a read
// the handler no longer expects.
func (l *lazyBody) startDeferred() { l.begin(false) }

// begin starts the read unless it has begun, or, for the timer
// (!afterTimer), unless the timer's say has ended.
func (l *lazyBody) begin(afterTimer bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q == nil && (afterTimer || !l.timerDone) {
		l.q = readQueuedBody(l.body, l.max, l.cancel)
	}
}

// stopTimer ends the deferral timer's say.
func (l *lazyBody) stopTimer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timerDone = true
}

func (l *lazyBody) get() *queuedBody {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.q
}
