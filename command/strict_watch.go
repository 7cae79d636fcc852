package command

import (
	"net"
	"sync"
	"time"

	"github.com/slotgate/slotgate/proxy"
)

// earlyClient is a connection's client as the listener offers its
// requests to the proxy's front end (proxy.EarlyClient). A connection
// keeps one (strictConn.client) for every request it offers, with one
// timer: a request asks for a watch (Watch arms the timer) and ends it
// (Unwatch), and no request pays an allocation for either. A fire of the
// timer that comes late, once Unwatch stopped it in vain, finds the watch
// over and starts nothing, or finds the connection's next request armed
// and starts that request's watch early: the watch it starts is always
// the current request's.
type earlyClient struct {
	c      *strictConn
	remote *proxy.ClientAddr // made at the first RemoteAddr; the connection's goroutine's

	mu    sync.Mutex
	state watchState
	timer *time.Timer   // runs fire; made at the first Watch
	cut   proxy.Cutter  // the armed request's
	done  chan struct{} // closed when a started watch has ended
	gone  bool          // the watch saw the client leave
	got   []byte        // what the client sent while watched
}

type watchState uint8

const (
	watchIdle  watchState = iota // no request asked for a watch
	watchArmed                   // the timer runs for the current request
	watching                     // the watch reads the client
	watchOver                    // Unwatch ran: no watch starts any more
)

func (e *earlyClient) Write(p []byte) (int, error) { return e.c.write(p) }

// RemoteAddr is the client's address, its text made once a connection
// (proxy.ClientAddr): each early request's access-log line names it.
func (e *earlyClient) RemoteAddr() net.Addr {
	if e.remote == nil {
		e.remote = proxy.NewClientAddr(e.c.Conn.RemoteAddr())
	}
	return e.remote
}

// Conn is the connection the relay carries a stream the front end served
// on (proxy.LendingClient), once net/http let go of it (strictConn.lend).
func (e *earlyClient) Conn() net.Conn { return e.c }

// Watch arms the timer that starts the request's watch (fire) after the
// given time: the engine's fast answers end before it and never pay for
// a watch.
func (e *earlyClient) Watch(after time.Duration, cut proxy.Cutter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state, e.cut, e.gone = watchArmed, cut, false
	if e.timer == nil {
		e.timer = time.AfterFunc(after, e.fire)
		return
	}
	e.timer.Reset(after)
}

// fire reads the client's socket while the engine works, on the timer's
// goroutine, until Unwatch cuts the read short, the client leaves (a
// close or a reset runs the cut) or sends something (a pipelined
// request, kept for the next read): as net/http's background read, which
// stops at a client's first byte, a client that sends its next request
// and then closes its side is not taken for gone. net/http's idle
// deadline is lifted meanwhile: a generation may take longer than the
// idle timeout.
func (e *earlyClient) fire() {
	e.mu.Lock()
	if e.state != watchArmed {
		e.mu.Unlock()
		return
	}
	done := make(chan struct{})
	e.state, e.done = watching, done
	cut := e.cut
	// Lifted under the lock: Unwatch sets its deadline in the past under
	// it too, so that one always comes after this and cuts the read.
	_ = e.c.SetReadDeadline(time.Time{})
	e.mu.Unlock()
	defer close(done)
	var buf [512]byte
	n, err := e.c.Conn.Read(buf[:])
	e.got = append(e.got, buf[:n]...)
	if n == 0 && err != nil && !isTimeout(err) {
		e.gone = true
		cut.Now()
	}
}

// Unwatch ends the request's watch, or keeps it from starting, and
// reports whether the client left. What the watch read goes into the
// connection's buffer, after the request being served, and net/http's
// idle deadline is set again.
func (e *earlyClient) Unwatch() bool {
	e.mu.Lock()
	started := e.state == watching
	e.state = watchOver
	done := e.done
	if started {
		// After the watch lifted the deadline (fire, under the lock):
		// its read ends now.
		_ = e.c.Conn.SetReadDeadline(time.Unix(1, 0))
	}
	e.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop() // a fire too late to stop finds watchOver
	}
	if !started {
		return false
	}
	<-done
	c := e.c
	c.in = append(c.in, e.got...)
	e.got = e.got[:0]
	c.restoreIdle()
	return e.gone
}

// restoreIdle sets net/http's idle deadline again after a watch lifted
// it (and Unwatch set one in the past): the idle timeout from now, or
// none, as keepIdle sets it after an early answer.
func (c *strictConn) restoreIdle() {
	c.idleUntil.Store(0)
	if c.idle <= 0 {
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	c.keepIdle()
}

var _ proxy.LendingClient = (*earlyClient)(nil)
