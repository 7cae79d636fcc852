package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Socket reads and writes a connection's socket raw (Read, Write,
// WriteWait), and waits in Go's netpoller as the connection's own Read
// and Write do, through its syscall.RawConn: the same calls, the same
// deadlines, the same errors, without the runtime's system-call
// bookkeeping. Like a net.Conn it may be used by several goroutines at
// once: each call keeps its state apart (a call from a pool, with its
// functions bound once), and the descriptor's own locks order them. A
// Socket is two interfaces, kept by value: a connection pays nothing more
// for it while no call is under way, which matters with thousands of
// streams held.
type Socket struct {
	c   net.Conn // the connection, for its addresses in errors
	raw syscall.RawConn
}

// NewSocket returns c's Socket, or one not Usable when c is not a socket
// Go's net package opened (TLS, a pipe, a wrapper): those are read and
// written as they are.
func NewSocket(c net.Conn) Socket {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	case *fileConn: // a socket MoveIn gave back
		sc = c
	default:
		return Socket{} // a descriptor of unknown kind may block
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return Socket{}
	}
	return Socket{c: c, raw: raw}
}

// Usable reports whether s has a socket to work.
func (s Socket) Usable() bool { return s.raw != nil }

// RawConn is the socket's.
func (s Socket) RawConn() syscall.RawConn { return s.raw }

// call is one Read's, Write's or WriteWait's state, and the functions
// RawConn runs with it.
type call struct {
	buf  []byte
	pool *sync.Pool // ReadPooled's: buf is taken from it for each try
	got  *[]byte    // ReadPooled's: the buffer read into
	n    int
	err  syscall.Errno
	peek bool // WriteWait: look for the peer's close first
	// closed: the look saw the peer's close; waiting: written whole, the
	// call waits for the answer.
	closed, waiting bool

	read, write, writeWait, readPooled func(fd uintptr) bool
}

// calls holds the calls not under way: a Socket keeps none of its own.
var calls = sync.Pool{New: func() any {
	k := &call{}
	k.read, k.write, k.writeWait, k.readPooled = k.readStep, k.writeStep, k.writeWaitStep, k.readPooledStep
	return k
}}

func takeCall(buf []byte) *call {
	k := calls.Get().(*call)
	*k = call{buf: buf, read: k.read, write: k.write, writeWait: k.writeWait, readPooled: k.readPooled}
	return k
}

func (k *call) done() {
	k.buf, k.pool, k.got = nil, nil, nil
	calls.Put(k)
}

// Read reads as net.Conn's Read does: at least a byte, waiting for one,
// or (0, io.EOF) at the peer's close, or an error, a *net.OpError of
// "read".
func (s Socket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	k := takeCall(p)
	err := s.raw.Read(k.read)
	n, errno := k.n, k.err
	k.done()
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case errno != 0:
		return 0, s.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (k *call) readStep(fd uintptr) bool {
	for {
		n, err := Read(int(fd), k.buf)
		switch err {
		case nil:
			k.n = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for the socket to be readable
		}
		k.err = errnoOf(err)
		return true
	}
}

// ReadPooled reads as Read does into a buffer from pool, which holds
// *[]byte of some capacity, and returns that buffer with what was read
// (its length) on success, nil on failure. The buffer is taken for each
// try and given back when the try finds nothing, so a socket that waits
// holds none: a caller whose own buffer is small (net/http's peek of a
// few bytes, its watch's one byte) reads a whole request in one system
// call, where reading into its buffer first would take two.
func (s Socket) ReadPooled(pool *sync.Pool) (*[]byte, error) {
	k := takeCall(nil)
	k.pool = pool
	err := s.raw.Read(k.readPooled)
	got, errno := k.got, k.err
	k.done()
	switch {
	case err != nil:
		return nil, s.opError("read", err)
	case errno != 0:
		return nil, s.opError("read", os.NewSyscallError("read", errno))
	case got == nil:
		return nil, io.EOF
	}
	return got, nil
}

func (k *call) readPooledStep(fd uintptr) bool {
	pb := k.pool.Get().(*[]byte)
	k.buf = (*pb)[:cap(*pb)]
	done := k.readStep(fd)
	k.buf = nil
	if done && k.err == 0 && k.n > 0 {
		*pb = (*pb)[:k.n]
		k.got = pb
		return true
	}
	*pb = (*pb)[:0]
	k.pool.Put(pb)
	return done
}

// Write writes all of p as net.Conn's Write does, waiting for room when
// the socket is full; its error is a *net.OpError of "write".
func (s Socket) Write(p []byte) (int, error) {
	k := takeCall(p)
	err := s.raw.Write(k.write)
	n, errno := k.n, k.err
	k.done()
	switch {
	case errno != 0:
		return n, s.opError("write", os.NewSyscallError("write", errno))
	case err != nil:
		return n, s.opError("write", err)
	}
	return n, nil
}

func (k *call) writeStep(fd uintptr) bool {
	return k.writeSome(fd) || k.n == len(k.buf)
}

// writeSome writes what is left of buf until it is all written, the
// socket is full (false), or the write fails (true, err set).
func (k *call) writeSome(fd uintptr) bool {
	for k.n < len(k.buf) {
		n, err := Write(int(fd), k.buf[k.n:])
		switch err {
		case nil:
			k.n += n
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		k.err = errnoOf(err)
		return true
	}
	return false
}

// WriteWait writes b and waits until the peer's answer can be read, in
// one RawConn.Read, for a request the peer answers. Go's own write and
// read would make a read that finds nothing (the answer is not there
// yet) before they park: a system call per request. Waiting without that
// read is safe only where nothing comes before the request's answer but
// the peer's close: RawConn.Read forgets the socket's readiness before it
// calls the function, so an answer that comes after the write wakes the
// wait. With peek it first looks for the peer's close, which it reports
// (closed) having written nothing. A socket too full to take b whole
// gets the rest from Write, which waits for room. The wait's own failure
// (a deadline) is left to the read that follows.
func (s Socket) WriteWait(b []byte, peek bool) (closed bool, err error) {
	k := takeCall(b)
	k.peek = peek
	rerr := s.raw.Read(k.writeWait)
	n, errno, closed, waiting := k.n, k.err, k.closed, k.waiting
	k.done()
	switch {
	case closed:
		return true, nil
	case errno != 0:
		return false, s.opError("write", os.NewSyscallError("write", errno))
	case waiting:
		return false, nil
	case rerr != nil:
		return false, s.opError("write", rerr) // before the write: a deadline, a close
	}
	_, err = s.Write(b[n:])
	return false, err
}

func (k *call) writeWaitStep(fd uintptr) bool {
	if k.waiting {
		return true // woken: the answer, or the peer's close, is there
	}
	if k.peek {
		k.peek = false
		if k.closed = PeerClosed(int(fd)); k.closed {
			return true
		}
	}
	if k.writeSome(fd) || k.n < len(k.buf) {
		return true // failed, or full: the rest is Write's
	}
	k.waiting = true
	return false
}

func errnoOf(err error) syscall.Errno {
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO
}

// opError wraps err as net.Conn's Read and Write do; an error RawConn
// already wrapped (a deadline, a closed connection) gets the operation's
// name instead of RawConn's ("raw-read"), which net/http looks at.
func (s Socket) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return connOpError(s.c, op, err)
}

// connOpError is err as c's method op fails with it: a *net.OpError
// naming c's addresses, as net's connections make them.
func connOpError(c net.Conn, op string, err error) *net.OpError {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
