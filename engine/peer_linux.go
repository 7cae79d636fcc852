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
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
	})
	return closed
}
