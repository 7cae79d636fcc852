//go:build linux && !race

package rawio

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/slotgate/slotgate/internal/loopback"
)

// BenchmarkSocketCalls moves one stream event (230 bytes) over a loopback
// connection per iteration, a write on one end and a read on the other,
// with the calls the package makes (recvfrom, sendto) and with read(2) and
// write(2), which it made before: the same socket work, the file layer's
// around it or not.
func BenchmarkSocketCalls(b *testing.B) {
	calls := []struct {
		name        string
		read, write func(fd int, p []byte) (int, error)
	}{
		{"recvfrom-sendto", Read, Write},
		{"read-write", fileRead, fileWrite},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			x, y := loopback.Pair(b)
			xfd, yfd := fdOf(b, x), fdOf(b, y)
			event := make([]byte, 230)
			buf := make([]byte, 64<<10)
			for b.Loop() {
				if n, err := c.write(xfd, event); n != len(event) || err != nil {
					b.Fatalf("write = %d, %v", n, err)
				}
				if n, err := c.read(yfd, buf); n != len(event) || err != nil {
					b.Fatalf("read = %d, %v", n, err) // loopback delivers within the write
				}
			}
		})
	}
}

func fileRead(fd int, p []byte) (int, error)  { return fileIO(syscall.SYS_READ, fd, p) }
func fileWrite(fd int, p []byte) (int, error) { return fileIO(syscall.SYS_WRITE, fd, p) }

func fileIO(trap uintptr, fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
