package rawio

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fileConn is the connection MoveIn gives back: a socket worked through
// an *os.File, which waits in Go's netpoller as a net.TCPConn does, with
// the same deadlines.
//
// Why not net.FileConn: it duplicates the descriptor, asks the kernel
// for the socket's type and both its addresses, registers the duplicate
// in the netpoller, and sets no-delay and four keep-alive options again,
// though the socket kept them; and os.NewFile, which it starts from,
// registers the original too, which its Close then takes out. About 15
// system calls a move, a stream's engine connection and kept client each
// moving once a stream: 9% of slotgate's CPU in stream-churn
// (BENCHMARKS.md). os.NewFile alone makes two: a look at the flags, and
// the registration. The addresses are asked for only when something
// wants them (an error, a log line, net/http's RemoteAddr).
type fileConn struct {
	f      *os.File
	raw    rawConn
	closed atomic.Bool

	addrOnce      sync.Once
	local, remote net.Addr
}

func newFileConn(f *os.File) (*fileConn, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &fileConn{f: f}
	c.raw = rawConn{RawConn: raw, c: c}
	return c, nil
}

// Read and Write are net.Conn's: io.EOF as it is at the peer's close,
// other errors *net.OpError, and net.ErrClosed once the connection is
// closed, as a net.TCPConn's.
func (c *fileConn) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	if err == io.EOF {
		return n, err
	}
	return n, c.opError("read", err)
}

func (c *fileConn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	return n, c.opError("write", err)
}

func (c *fileConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return c.opError("close", net.ErrClosed)
	}
	return c.opError("close", c.f.Close())
}

// CloseWrite shuts the socket's writing side, as net.TCPConn's does
// (net/http half-closes with it before closing).
func (c *fileConn) CloseWrite() error {
	var serr error
	if err := c.raw.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_WR) }); err != nil {
		return c.opError("close", err)
	}
	return c.opError("close", serr)
}

func (c *fileConn) SetDeadline(t time.Time) error { return c.opError("set", c.f.SetDeadline(t)) }
func (c *fileConn) SetReadDeadline(t time.Time) error {
	return c.opError("set", c.f.SetReadDeadline(t))
}
func (c *fileConn) SetWriteDeadline(t time.Time) error {
	return c.opError("set", c.f.SetWriteDeadline(t))
}

// SyscallConn is the socket's, for this package's raw calls and a
// relay's: its calls fail with net.ErrClosed once the connection is
// closed.
func (c *fileConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

func (c *fileConn) LocalAddr() net.Addr {
	c.addrOnce.Do(c.readAddrs)
	return c.local
}

func (c *fileConn) RemoteAddr() net.Addr {
	c.addrOnce.Do(c.readAddrs)
	return c.remote
}

// readAddrs asks the kernel for the socket's addresses, once; an address
// it cannot tell (the socket closed first) is "unknown".
func (c *fileConn) readAddrs() {
	c.local, c.remote = unknownAddr{}, unknownAddr{}
	_ = c.raw.RawConn.Control(func(fd uintptr) {
		if sa, err := syscall.Getsockname(int(fd)); err == nil {
			c.local = addrOf(sa)
		}
		if sa, err := syscall.Getpeername(int(fd)); err == nil {
			c.remote = addrOf(sa)
		}
	})
}

// addrOf is a socket address as net's connections give it (an IPv6
// address's zone left out).
func addrOf(sa syscall.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)))
	case *syscall.SockaddrInet6:
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)))
	case *syscall.SockaddrUnix:
		return &net.UnixAddr{Name: sa.Name, Net: "unix"}
	}
	return unknownAddr{}
}

type unknownAddr struct{}

func (unknownAddr) Network() string { return "unknown" }
func (unknownAddr) String() string  { return "unknown" }

// opError makes err what a net.TCPConn's method returns: nil stays nil,
// a closed connection's error is net.ErrClosed, and the file's
// *os.PathError becomes a *net.OpError around the same cause.
func (c *fileConn) opError(op string, err error) error {
	if err == nil {
		return nil
	}
	if c.closed.Load() || errors.Is(err, os.ErrClosed) {
		err = net.ErrClosed
	} else if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	if op == "set" {
		return &net.OpError{Op: op, Net: "tcp", Err: err} // the addresses are not worth the calls here
	}
	return connOpError(c, op, err)
}

// rawConn is a fileConn's syscall.RawConn: the file's, whose calls fail
// with the file's own "use of closed file" once it is closed, where a
// net.Conn's fail with net.ErrClosed.
type rawConn struct {
	syscall.RawConn
	c *fileConn
}

func (r rawConn) Control(f func(fd uintptr)) error { return r.c.closedErr(r.RawConn.Control(f)) }
func (r rawConn) Read(f func(fd uintptr) bool) error {
	return r.c.closedErr(r.RawConn.Read(f))
}
func (r rawConn) Write(f func(fd uintptr) bool) error {
	return r.c.closedErr(r.RawConn.Write(f))
}

func (c *fileConn) closedErr(err error) error {
	if err != nil && c.closed.Load() {
		return net.ErrClosed
	}
	return err
}
