package fastplane

import "syscall"

// peerClosedWhenReadable waits until the socket is readable (or its read
// deadline passes), and reports whether the peer closed or reset it.
func peerClosedWhenReadable(raw syscall.RawConn) bool {
	closed := false
	err := raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			return false // nothing yet: park until readable
		case err != nil || n == 0:
			closed = true
		}
		return true
	})
	return err == nil && closed
}
