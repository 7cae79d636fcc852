package engine

import (
	"net"
	"syscall"

	"github.com/slotgate/slotgate/internal/rawio"
)

// PeerClosed reports whether the peer closed or reset c. It peeks at c's
// socket (MSG_PEEK, no wait): a read of 0 bytes is the peer's close, an
// error other than "would block" a reset. Bytes waiting (a pipelined
// request, HTTP/2 frames) or nothing yet both mean the peer is there. It
// returns false when that is not known: c is no socket (TLS and other
// wrapped connections).
func PeerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	if err := raw.Control(func(fd uintptr) { closed = rawio.PeerClosed(int(fd)) }); err != nil {
		return false
	}
	return closed
}

// writeWait writes b, whole, to the engine, and waits until its answer
// can be read (rawio.Socket.WriteWait: no read that finds nothing before
// the wait), looking first, with peek, for the engine's close: a
// connection the engine closed fails with errEngineClosed, nothing
// written. Nothing comes on an engine connection before the answer to
// its request but the engine's close, which makes the wait safe.
func (ec *conn) writeWait(b []byte, peek bool) error {
	if !ec.sock.Usable() {
		if err := ec.look(peek); err != nil {
			return err
		}
		_, err := ec.c.Write(b)
		return err
	}
	closed, err := ec.sock.WriteWait(b, peek)
	if closed {
		return errEngineClosed
	}
	return err
}
