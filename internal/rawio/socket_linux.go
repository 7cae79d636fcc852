package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Socket reads and writes a connection's socket raw (Read, Write), and
// waits in Go's netpoller as the connection's own Read and Write do,
// through its syscall.RawConn: the same calls, the same deadlines, the
// same errors, without the runtime's system-call bookkeeping. Like a
// net.Conn it may be used by several goroutines at once: a Read and a
// Write overlap, two Reads (or Writes) take turns, as they would on the
// descriptor's own lock. Its functions are bound once, so neither
// allocates.
type Socket struct {
	c   net.Conn // the connection, for its addresses in errors
	raw syscall.RawConn

	rmu  sync.Mutex // a Read's, with what its function fills in
	rfn  func(fd uintptr) bool
	rbuf []byte
	rn   int
	rerr error

	wmu  sync.Mutex // a Write's, likewise
	wfn  func(fd uintptr) bool
	wbuf []byte
	wn   int
	werr error
}

// NewSocket returns c's Socket, or nil when c is not a socket Go's net
// package opened (TLS, a pipe, a wrapper): those are read and written as
// they are.
func NewSocket(c net.Conn) *Socket {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil // a descriptor of unknown kind may block
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &Socket{c: c, raw: raw}
	s.rfn, s.wfn = s.read, s.write
	return s
}

// RawConn is the socket's, for a caller's own steps.
func (s *Socket) RawConn() syscall.RawConn { return s.raw }

// Read reads as net.Conn's Read does: at least a byte, waiting for one,
// or (0, io.EOF) at the peer's close, or an error a *net.OpError of
// "read".
func (s *Socket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.rbuf, s.rn, s.rerr = p, 0, nil
	err := s.raw.Read(s.rfn)
	n, rerr := s.rn, s.rerr
	s.rbuf = nil
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case rerr != nil:
		return 0, s.opError("read", os.NewSyscallError("read", rerr))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (s *Socket) read(fd uintptr) bool {
	for {
		n, err := Read(int(fd), s.rbuf)
		switch err {
		case nil:
			s.rn = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for the socket to be readable
		}
		s.rerr = err
		return true
	}
}

// Write writes all of p as net.Conn's Write does, waiting for room when
// the socket is full; its error is a *net.OpError of "write".
func (s *Socket) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf, s.wn, s.werr = p, 0, nil
	err := s.raw.Write(s.wfn)
	n, werr := s.wn, s.werr
	s.wbuf = nil
	switch {
	case werr != nil:
		return n, s.opError("write", os.NewSyscallError("write", werr))
	case err != nil:
		return n, s.opError("write", err)
	}
	return n, nil
}

func (s *Socket) write(fd uintptr) bool {
	for s.wn < len(s.wbuf) {
		n, err := Write(int(fd), s.wbuf[s.wn:])
		switch err {
		case nil:
			s.wn += n
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for room
		}
		s.werr = err
		return true
	}
	return true
}

// opError wraps err as net.Conn's Read and Write do; an error RawConn
// already wrapped (a deadline, a closed connection) gets the operation's
// name instead of RawConn's ("raw-read"), which net/http looks at.
func (s *Socket) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: s.c.LocalAddr().Network(), Source: s.c.LocalAddr(), Addr: s.c.RemoteAddr(), Err: err}
}
