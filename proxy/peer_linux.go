package proxy

import (
	"net"
	"syscall"
)

// peerClosed peeks at c's socket without waiting and without consuming
// anything: a read of 0 bytes is the peer's close, an error other than
// "would block" a reset. Bytes waiting (a pipelined request, HTTP/2
// frames) or nothing yet both mean the peer is there.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false // TLS and other wrapped connections: not known
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
