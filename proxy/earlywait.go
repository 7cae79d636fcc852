package proxy

import (
	"bytes"
	"net"

	"github.com/slotgate/slotgate/relay"
)

// Refused clients wait in the relay: under an overload storm nearly every
// request is refused, and a refused client's next request most likely
// is too. The listener lends a connection whose client it refused several
// times in a row, with nothing more from it buffered, to the relay's
// loops (Early.Lent, Lent.Waits), where its next requests are refused on
// the loop (answerWaiting): a read and a write each, with no goroutine
// woken, no read that finds nothing after the answer, and none of
// net/http's bookkeeping. The first request the gate does not refuse at
// once, or one the loop does not read whole (a head the front end does
// not answer, a body not all here, a second request behind the first),
// sends the connection back to the server with the bytes read ahead of
// it (WaitingConn.WaitedOutside): the listener frames them first, as if
// they had just come. The refusal is the front end's own (refuseHead):
// counted, reported and logged as ServeHTTP's would be.

// WaitingConn is a client's connection that can wait in the relay: the
// listener's, which lends its socket (relay.Mover) and takes the bytes
// the relay read back ahead of it (WaitedOutside).
type WaitingConn interface {
	net.Conn
	relay.Mover
	// WaitedOutside makes the connection net/http's to serve again, as if
	// just accepted, with ahead framed before anything it reads.
	WaitedOutside(ahead []byte)
}

// waitsEarly reports whether a refused client's connection c may wait in
// the relay: the relay is on, serves connections back, and c is one the
// listener can lend.
func (p *Proxy) waitsEarly(c EarlyClient) bool {
	if p.relay == nil || p.relay.Resume == nil {
		return false
	}
	_, ok := c.(LendingClient)
	return ok
}

// Waits reports whether l is a refused client's connection, to wait in
// the relay for its next request (Wait).
func (l *Lent) Waits() bool { return l.waits != nil }

// Wait parks c in the relay until its client's next request that the
// loop does not refuse. It fails, c as it was, when the relay cannot take
// c's socket.
func (l *Lent) Wait(c WaitingConn) error {
	p := l.waits
	if err := relay.Usable(c); err != nil {
		return err // not a non-blocking socket: the loop's calls must never block
	}
	remote := NewClientAddr(c.RemoteAddr()) // the moved connection has none
	return p.relay.Loops.Wait(&relay.Waiter{
		Mover:  c,
		Answer: func(req, out []byte) ([]byte, bool) { return p.answerWaiting(req, remote, out) },
		Resume: func(moved net.Conn, ahead []byte) {
			// The listener's connection takes its socket back as itself
			// (moved is c): the bytes go through its framing, never
			// straight to net/http.
			c.WaitedOutside(ahead)
			p.relay.Resume(moved)
		},
		Idle: p.relay.Idle,
	})
}

// answerWaiting appends to out the refusal of req, what one read of a
// waiting client's socket took, and reports true, when req is exactly
// one whole request the front end answers early (earlyHead) and the gate
// refuses at once; else it reports false.
func (p *Proxy) answerWaiting(req []byte, remote net.Addr, out []byte) ([]byte, bool) {
	i := bytes.Index(req, []byte("\r\n\r\n"))
	if i < 0 || p.closing.Load() {
		return out, false // net/http answers, and closes (CloseConnections)
	}
	head := req[:i+4]
	h, ok := p.earlyHead(head)
	if !ok || h.contentLength != int64(len(req)-len(head)) {
		return out, false
	}
	return p.refuseHead(&h, remote, out)
}
