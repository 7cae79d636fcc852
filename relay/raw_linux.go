package relay

import (
	"syscall"
	"unsafe"
)

// readRaw and writeRaw are read(2) and write(2) on a non-blocking socket
// without the runtime's system-call bookkeeping: such a call never
// blocks, so the loop keeps its processor through it, where
// syscall.Read would let the scheduler hand the processor to another
// thread should the call take more than 20 µs (as a loopback write that
// wakes its reader can), and take one back after it.
func readRaw(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, p) }

func writeRaw(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }

// rawIO makes the system call trap, read(2) or write(2), on fd and p.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// epollWaitRaw is epoll_wait(2) with a timeout of 0, which never blocks,
// without the runtime's bookkeeping either (see readRaw).
func epollWaitRaw(epfd int, events []syscall.EpollEvent) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
