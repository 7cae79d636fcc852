package rawio

import (
	"syscall"
	"unsafe"
)

// Read reads the non-blocking socket fd once (norace.go says how; race.go
// tells of race builds).
func Read(fd int, p []byte) (int, error) { return read(fd, p) }

// Write writes p to the non-blocking socket fd once.
func Write(fd int, p []byte) (int, error) { return write(fd, p) }

// sockIO makes the system call trap, recvfrom(2) or sendto(2), on the
// socket fd and p, with flags and no address.
func sockIO(trap uintptr, fd int, p []byte, flags int) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(ptr), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// PeerClosed peeks at the socket fd without waiting and reports whether
// its peer closed or reset it: a read of 0 bytes is the peer's close, an
// error other than "would block" a reset. Bytes waiting, or nothing yet,
// both mean the peer is there.
func PeerClosed(fd int) bool {
	var b [1]byte
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return (n == 0 && e == 0) || (e != 0 && e != syscall.EAGAIN && e != syscall.EINTR)
}

// EpollWait is epoll_wait(2) with a timeout of 0, which never blocks.
func EpollWait(epfd int, events []syscall.EpollEvent) (int, error) {
	return EpollWaitFor(epfd, events, 0)
}

// EpollCtl is epoll_ctl(2), which never blocks.
func EpollCtl(epfd, op, fd int, ev *syscall.EpollEvent) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd),
		uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// EpollWaitFor is epoll_wait(2) waiting at most msec milliseconds. With
// msec > 0 it blocks the calling thread with its processor held: see the
// relay's held wait for why that is wanted, and for its bounds.
func EpollWaitFor(epfd int, events []syscall.EpollEvent, msec int) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
