package engine

import (
	"net"
	"os"
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
	s := newSock(c)
	return s != nil && s.peerClosed()
}

// sock is an engine connection's socket as the client works it directly,
// with its functions made once: the look for the engine's close, and the
// write that then waits for the answer (writeWait). An engine connection
// keeps one, so that neither costs an allocation per request.
type sock struct {
	raw    syscall.RawConn
	lookFn func(fd uintptr)
	sendFn func(fd uintptr) bool
	closed bool // the look's: the engine closed the connection

	// writeWait's, for one call.
	out     []byte // left to write
	peek    bool   // look for the engine's close before the write
	err     error  // the write's
	waiting bool   // written whole: the call waits for the answer
}

func newSock(c net.Conn) *sock {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &sock{raw: raw}
	s.lookFn = func(fd uintptr) { s.closed = rawio.PeerClosed(int(fd)) }
	s.sendFn = s.send
	return s
}

// peerClosed peeks at the socket (see PeerClosed).
func (s *sock) peerClosed() bool {
	s.closed = false
	_ = s.raw.Control(s.lookFn)
	return s.closed
}

// writeWait writes b and waits until the engine's answer can be read, in
// one RawConn.Read: Go's own write and read would make a read that finds
// nothing (the engine has not answered yet) before they park, a system
// call per request. Waiting without that read is safe here, and only
// here: RawConn.Read forgets the socket's readiness before it calls send,
// so an answer that comes after the write wakes the wait, and nothing
// comes before the request but the engine's close, which the look made
// from within (peek) sees. With peek, an engine that closed the
// connection fails it with errEngineClosed, nothing written. A socket too
// full to take b whole gets the rest from Go's write, which waits for
// room. The wait's own failure (a Cut's deadline) is the read's to meet.
func (s *sock) writeWait(c net.Conn, b []byte, peek bool) error {
	s.out, s.peek, s.err, s.closed, s.waiting = b, peek, nil, false, false
	err := s.raw.Read(s.sendFn)
	rest := s.out
	s.out = nil
	switch {
	case s.closed:
		return errEngineClosed
	case s.err != nil:
		return &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", s.err)}
	case s.waiting:
		return nil
	case err != nil:
		return err // before the write: the connection was cut or closed
	}
	_, err = c.Write(rest)
	return err
}

// send is writeWait's step, called by RawConn.Read until it returns true.
func (s *sock) send(fd uintptr) bool {
	if s.waiting {
		return true // woken: the answer, or the engine's close, is there
	}
	if s.peek {
		s.peek = false
		if s.closed = rawio.PeerClosed(int(fd)); s.closed {
			return true
		}
	}
	for len(s.out) > 0 {
		n, err := rawio.Write(int(fd), s.out)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // full: the rest is Go's write's
		case err != nil:
			s.err = err
			return true
		}
		s.out = s.out[n:]
	}
	s.waiting = true
	return false
}

// peerClosed is PeerClosed for an engine connection.
func (ec *conn) peerClosed() bool {
	if ec.sock == nil {
		return PeerClosed(ec.c)
	}
	return ec.sock.peerClosed()
}

// writeWait writes b, whole, to the engine, and waits until its answer
// can be read (sock.writeWait), looking first, with peek, for the
// engine's close.
func (ec *conn) writeWait(b []byte, peek bool) error {
	if ec.sock == nil {
		if peek && PeerClosed(ec.c) {
			return errEngineClosed
		}
		_, err := ec.c.Write(b)
		return err
	}
	return ec.sock.writeWait(ec.c, b, peek)
}
