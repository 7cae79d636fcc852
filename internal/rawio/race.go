//go:build linux && race

package rawio

import "syscall"

// Under the race detector, reads and writes go through the syscall
// package: its Read and Write tell the detector that what a goroutine did
// before it wrote to a descriptor happened before what another does after
// it read from one (the kernel orders them; the detector sees no
// synchronisation in a raw call, and would report races that are none
// between a raw side and Go's own). Race builds are for tests: the
// product makes the calls raw, as recvfrom(2) and sendto(2) (norace.go).
func read(fd int, p []byte) (int, error) { return counted(syscall.Read(fd, p)) }

func write(fd int, p []byte) (int, error) { return counted(syscall.Write(fd, p)) }

// counted makes a failed call's count 0, as rawIO's is (the syscall
// package's is -1).
func counted(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}
