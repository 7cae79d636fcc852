//go:build linux && !race

package rawio

import "syscall"

// Sockets are read and written with recvfrom(2) and sendto(2), as HAProxy
// does, not read(2) and write(2): the same work in the socket layer
// without the file layer's around it (1–2.5% less CPU per stream event in
// BenchmarkSocketCalls and at 1024 streams; BENCHMARKS.md). sendto's
// MSG_NOSIGNAL makes a write to a connection the peer reset fail with
// EPIPE and no SIGPIPE for the runtime to catch and drop.
func read(fd int, p []byte) (int, error) { return sockIO(syscall.SYS_RECVFROM, fd, p, 0) }

func write(fd int, p []byte) (int, error) {
	return sockIO(syscall.SYS_SENDTO, fd, p, syscall.MSG_NOSIGNAL)
}
