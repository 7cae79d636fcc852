// Package rawio makes a socket's reads and writes (recvfrom(2),
// sendto(2)), a peek, epoll_ctl(2) and a zero-timeout or bounded
// epoll_wait(2) on non-blocking descriptors without the runtime's
// system-call bookkeeping (syscall.RawSyscall instead of
// syscall.Syscall), for the hot paths that move a request's bytes: the
// stream relay's loops and the engine client's write. MoveOut and MoveIn
// take a socket out of Go's netpoller while a loop of its own works it,
// and give it back: as a connection of this package's (an *os.File on
// the socket, in the netpoller, with a net.TCPConn's behaviour), which
// costs two system calls where net.FileConn makes some fifteen. Socket.ReadPooled reads into a buffer taken from a
// pool for each try and given back when the try finds nothing: a socket
// waiting for its next request holds no buffer.
//
// syscall.Read and its kin tell the scheduler that the thread may block,
// so that it can hand the thread's processor to another thread should the
// call take more than 20 µs (a loopback write that wakes its reader can),
// and take a processor back after it. A call on a non-blocking descriptor
// never blocks: made raw, it keeps its processor throughout.
//
// Invariants:
//   - every descriptor given to this package is non-blocking: a raw call
//     that blocked would hold a processor from the rest of the program,
//     and a stop-the-world pause with it; the callers check it
//     (relay.Usable) or hold descriptors Go's net package opened, or
//     MoveIn gave back (it refuses one the netpoller would not take);
//   - a connection MoveIn gives back behaves as a net.TCPConn: its
//     errors *net.OpError (io.EOF itself at the peer's close), and
//     net.ErrClosed from every call, raw ones included, once closed;
//   - the calls return the kernel's errno as a syscall.Errno and nothing
//     else: EAGAIN and EINTR are the caller's to handle.
package rawio
