package rawio

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// MoveOut takes the socket of c, a *net.TCPConn, a *net.UnixConn or a
// connection MoveIn gave back, out of Go's netpoller: it returns a
// duplicate descriptor of the socket (close on exec, non-blocking, as
// c's was) and closes c, which takes c's own descriptor out of the
// netpoller's set. The socket stays open through
// the duplicate, the caller's to work raw and to give back with MoveIn.
//
// Why: Go's netpoller watches every socket it made, edge-triggered, and
// an idle processor's thread sleeps on that set. A socket whose bytes an
// event loop moves on its own epoll set (the relay's) would wake that
// thread at each of its events for nothing.
func MoveOut(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("rawio: move out a %T: %w", c, errors.ErrUnsupported)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("rawio: move out: %w", err)
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) {
		fd, dupErr = dupCloexec(int(s))
	}); err != nil {
		return -1, fmt.Errorf("rawio: move out: %w", err)
	}
	if dupErr != nil {
		return -1, fmt.Errorf("rawio: move out: dup: %w", dupErr)
	}
	_ = c.Close() // the duplicate keeps the socket open
	return fd, nil
}

// MoveIn gives a socket taken out by MoveOut back to Go: a connection
// on it, in the netpoller again, with a net.TCPConn's behaviour
// (fileConn: two system calls, where net.FileConn makes some 15). The
// descriptor fd is the connection's then, and on failure closed.
func MoveIn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "moved-socket") // non-blocking, as MoveOut's duplicate is: in the netpoller
	if f == nil {
		return nil, fmt.Errorf("rawio: move in: bad descriptor %d", fd)
	}
	// A descriptor os.NewFile found blocking is not in the netpoller, and
	// its file has no deadlines: MoveOut never gives one, and a raw call
	// on it would block.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("rawio: move in descriptor %d: not a non-blocking socket: %w", fd, err)
	}
	c, err := newFileConn(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("rawio: move in: %w", err)
	}
	return c, nil
}

func dupCloexec(fd int) (int, error) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(n), nil
	}
}
