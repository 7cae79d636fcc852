package command

import (
	"net"
	"sync"
	"time"

	"github.com/slotgate/slotgate/proxy"
)

// earlyClient is a request's client as the listener offers the request
// to the proxy's front end (proxy.EarlyClient): one per request, so that
// a watch that starts late (its timer fired as the engine answered) can
// never watch the connection's next request.
type earlyClient struct {
	c *strictConn

	mu    sync.Mutex
	state watchState
	done  chan struct{} // closed when a started watch has ended
	gone  bool          // the watch saw the client leave
	got   []byte        // what the client sent while watched
}

type watchState uint8

const (
	watchIdle watchState = iota
	watching
	watchOver // Unwatch ran: no watch starts any more
)

func (e *earlyClient) Write(p []byte) (int, error) { return e.c.write(p) }

func (e *earlyClient) RemoteAddr() net.Addr { return e.c.Conn.RemoteAddr() }

// Watch reads the client's socket while the engine works, on the
// caller's goroutine (the proxy's timer), until Unwatch cuts the read
// short, the client leaves (a close or a reset runs gone) or sends
// something (a pipelined request, kept for the next read): as net/http's
// background read, which stops at a client's first byte, a client that
// sends its next request and then closes its side is not taken for gone.
// net/http's idle deadline is lifted meanwhile: a generation may take
// longer than the idle timeout.
func (e *earlyClient) Watch(gone func()) {
	e.mu.Lock()
	if e.state != watchIdle {
		e.mu.Unlock()
		return
	}
	e.state, e.done = watching, make(chan struct{})
	e.mu.Unlock()
	defer close(e.done)
	_ = e.c.SetReadDeadline(time.Time{})
	var buf [512]byte
	n, err := e.c.Conn.Read(buf[:])
	e.got = append(e.got, buf[:n]...)
	if n == 0 && err != nil && !isTimeout(err) {
		e.gone = true
		gone()
	}
}

// Unwatch ends the watch and reports whether the client left. What the
// watch read goes into the connection's buffer, after the request being
// served, and net/http's idle deadline is set again.
func (e *earlyClient) Unwatch() bool {
	e.mu.Lock()
	started := e.state == watching
	e.state = watchOver
	e.mu.Unlock()
	if !started {
		return false
	}
	_ = e.c.Conn.SetReadDeadline(time.Unix(1, 0))
	<-e.done
	c := e.c
	c.in = append(c.in, e.got...)
	c.restoreIdle()
	return e.gone
}

// restoreIdle sets net/http's idle deadline again after a watch lifted
// it: the idle timeout from now, or none.
func (c *strictConn) restoreIdle() {
	if c.idle <= 0 {
		_ = c.SetReadDeadline(time.Time{})
		return
	}
	c.idleUntil.Store(0)
	c.keepIdle()
}

var _ proxy.EarlyClient = (*earlyClient)(nil)
