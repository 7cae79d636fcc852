package engine

import (
	"net"
	"syscall"
)

// PeerClosed reports whether the peer closed or reset c. It peeks at c's
// socket (MSG_PEEK, no wait): a read of 0 bytes is the peer's close, an
// error other than "would block" a reset. Bytes waiting (a pipelined
// request, HTTP/2 frames) or nothing yet both mean the peer is there. It
// returns false when that is not known: c is no socket (TLS and other
// wrapped connections).
func PeerClosed(c net.Conn) bool {
	p := newPeerProbe(c)
	return p != nil && p.closed(p.raw)
}

// peerProbe looks at a socket for its peer's close, with its function
// made once: an engine connection keeps one, so that the look before
// each generation costs no allocation.
type peerProbe struct {
	raw  syscall.RawConn
	fn   func(fd uintptr) // look, bound once
	seen bool
}

func newPeerProbe(c net.Conn) *peerProbe {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &peerProbe{raw: raw}
	p.fn = p.look
	return p
}

// closed peeks at raw's socket (see PeerClosed).
func (p *peerProbe) closed(raw syscall.RawConn) bool {
	p.seen = false
	_ = raw.Control(p.fn)
	return p.seen
}

func (p *peerProbe) look(fd uintptr) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.seen = (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
}

// peerClosed is PeerClosed for an engine connection.
func (ec *conn) peerClosed() bool {
	if ec.probe == nil {
		return PeerClosed(ec.c)
	}
	return ec.probe.closed(ec.probe.raw)
}
