package fastplane

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/engine"
)

// connWatch is a queued request's gate.Watch: fasthttp has no
// per-request context that ends when the client hangs up, and it does not
// read the connection while the handler runs, so nothing would notice a
// queued client leave. Start parks one goroutine in Go's netpoller on the
// client's socket (a raw read that peeks and waits): it wakes when the
// socket becomes readable, and a peek of 0 bytes (or a reset) is the
// peer's close, which cancels the request's context and fails the wait.
// Bytes waiting (a pipelined request) mean the client is there: the watch
// then ends, and the request waits on, unwatched.
type connWatch struct {
	conn   net.Conn
	cancel context.CancelFunc // the request's context, Admit's parent
	done   chan struct{}      // closed when the goroutine ends
	once   sync.Once
}

// aLongTimeAgo is a read deadline in the past: it wakes the parked read.
var aLongTimeAgo = time.Unix(1, 0)

// Start begins watching. The connection's read deadline (fasthttp's, for
// the request it read) is cleared first: a wait may outlast it, and
// fasthttp sets it again before its next read.
func (w *connWatch) Start(fail func(error)) {
	w.done = make(chan struct{})
	raw, ok := rawConn(w.conn)
	if !ok {
		close(w.done)
		return
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(w.done)
		if peerClosedWhenReadable(raw) {
			w.cancel()
			fail(context.Canceled)
		}
	}()
}

// Settle ends the watch: the parked read is woken by a deadline in the
// past, and the deadline is cleared once the goroutine ended.
func (w *connWatch) Settle(bool) error {
	w.once.Do(func() {
		_ = w.conn.SetReadDeadline(aLongTimeAgo)
		<-w.done
		_ = w.conn.SetReadDeadline(time.Time{})
	})
	return nil
}

// Gone peeks at the socket once, without waiting.
func (w *connWatch) Gone() bool { return engine.PeerClosed(w.conn) }

func rawConn(c net.Conn) (syscall.RawConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	return raw, err == nil
}
