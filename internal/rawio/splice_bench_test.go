//go:build linux && !race

package rawio

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/slotgate/slotgate/internal/loopback"
)

// BenchmarkRelayCopy moves a stream's bytes from an engine's socket to a
// client's, over loopback, as the relay does (one recvfrom into the
// loop's buffer, one sendto) and as splice(2) would (the engine's socket
// into a pipe, the pipe into the client's socket, no copy through user
// memory): for an event's size and for bursts. Each iteration writes the
// bytes on the engine's side and reads them on the client's, the same for
// both ways, so the difference between them is the relay's own calls.
// The relay keeps recvfrom and sendto: BENCHMARKS.md, "splice".
func BenchmarkRelayCopy(b *testing.B) {
	ways := []struct {
		name string
		move func(r *relayPair, b *testing.B)
	}{
		{"recvfrom-sendto", (*relayPair).copyOnce},
		{"splice", (*relayPair).spliceOnce},
	}
	for _, size := range []int{230, 4 << 10, 64 << 10} {
		for _, way := range ways {
			b.Run(fmt.Sprintf("%dB/%s", size, way.name), func(b *testing.B) {
				r := newRelayPair(b)
				payload := make([]byte, size)
				sink := make([]byte, 64<<10)
				b.SetBytes(int64(size))
				for b.Loop() {
					sent, got := 0, 0
					for got < size {
						if sent < size {
							sent += r.write(b, payload[sent:])
						}
						way.move(r, b)
						n, err := Read(r.client, sink)
						mustOrAgain(b, "client read", err)
						got += n
					}
				}
			})
		}
	}
}

// relayPair is an engine's connection and a client's, with the relay's
// ends of both, its buffer and a pipe for splice.
type relayPair struct {
	engine, from, to, client int
	buf                      []byte
	pending                  []byte // read from the engine, not yet written
	pipe                     [2]int
	inPipe                   int // bytes spliced into the pipe, not yet out
}

func newRelayPair(b *testing.B) *relayPair {
	engine, from := loopback.Pair(b)
	to, client := loopback.Pair(b)
	r := &relayPair{
		engine: fdOf(b, engine), from: fdOf(b, from), to: fdOf(b, to), client: fdOf(b, client),
		buf: make([]byte, 64<<10),
	}
	if err := syscall.Pipe2(r.pipe[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = syscall.Close(r.pipe[0]); _ = syscall.Close(r.pipe[1]) })
	return r
}

// write is the engine's: as much of p as its socket takes.
func (r *relayPair) write(b *testing.B, p []byte) int {
	n, err := Write(r.engine, p)
	mustOrAgain(b, "engine write", err)
	return n
}

// copyOnce is the relay's way: a read when nothing waits to be written,
// then a write of what waits.
func (r *relayPair) copyOnce(b *testing.B) {
	if len(r.pending) == 0 {
		n, err := Read(r.from, r.buf)
		mustOrAgain(b, "relay read", err)
		r.pending = r.buf[:n]
	}
	if len(r.pending) > 0 {
		n, err := Write(r.to, r.pending)
		mustOrAgain(b, "relay write", err)
		r.pending = r.pending[n:]
	}
}

// spliceOnce is splice's way: the engine's bytes into the pipe when it
// is empty, then the pipe's into the client's socket.
func (r *relayPair) spliceOnce(b *testing.B) {
	const flags = 0x1 | 0x2 // SPLICE_F_MOVE | SPLICE_F_NONBLOCK
	if r.inPipe == 0 {
		n, err := syscall.Splice(r.from, nil, r.pipe[1], nil, len(r.buf), flags)
		mustOrAgain(b, "splice in", err)
		r.inPipe = int(max(n, 0))
	}
	if r.inPipe > 0 {
		n, err := syscall.Splice(r.pipe[0], nil, r.to, nil, r.inPipe, flags)
		mustOrAgain(b, "splice out", err)
		r.inPipe -= int(max(n, 0))
	}
}

// mustOrAgain fails the benchmark on an error of what, a call on a
// non-blocking descriptor, other than "would block" (nothing to move yet).
func mustOrAgain(b *testing.B, what string, err error) {
	b.Helper()
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		b.Fatalf("%s: %v", what, err)
	}
}
