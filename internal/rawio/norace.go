//go:build linux && !race

package rawio

import "syscall"

func read(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, p) }

func write(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }
