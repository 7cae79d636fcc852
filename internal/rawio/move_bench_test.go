//go:build linux

package rawio

import (
	"net"
	"testing"

	"github.com/slotgate/slotgate/internal/loopback"
)

// BenchmarkMoveOutIn takes a connection's socket out of Go's netpoller
// and back, as the relay does with a stream's two sockets: the cost each
// move in adds to the loop that makes it.
func BenchmarkMoveOutIn(b *testing.B) {
	x, _ := loopback.Pair(b)
	var c net.Conn = x
	for b.Loop() {
		fd, err := MoveOut(c)
		if err != nil {
			b.Fatal(err)
		}
		if c, err = MoveIn(fd); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.Close()
}
