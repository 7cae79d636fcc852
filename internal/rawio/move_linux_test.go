package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/epollinfo"
	"github.com/slotgate/slotgate/internal/loopback"
)

// TestMoveOutIn: a socket moved out is no longer in any epoll set of the
// process (Go's netpoller's included, read from /proc/self/fdinfo), its
// bytes move through the descriptor MoveOut returned, and MoveIn gives
// a connection that works it again, watched by the netpoller again.
func TestMoveOutIn(t *testing.T) {
	a, b := loopback.Pair(t)
	sock := fdOf(t, a)
	fd, err := dupCloexec(sock) // to find the socket's file after a closes
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if n := setsHolding(t, fd); n != 1 {
		t.Fatalf("before MoveOut the socket is in %d epoll sets, want 1 (Go's netpoller)", n)
	}
	moved, err := MoveOut(a)
	if err != nil {
		t.Fatal(err)
	}
	if n := setsHolding(t, fd); n != 0 {
		t.Errorf("after MoveOut the socket is still in %d epoll sets, want none", n)
	}
	_ = a.SetReadDeadline(time.Now().Add(time.Second)) // bounds the check should a be open
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the moved-out connection's Read = %v, want net.ErrClosed", err)
	}
	if _, err := Write(moved, []byte("out")); err != nil {
		t.Fatalf("write on the moved-out descriptor: %v", err)
	}
	expect(t, b, "out")
	if _, err := b.Write([]byte("in")); err != nil {
		t.Fatal(err)
	}
	if got := readRaw(t, moved, 2); got != "in" {
		t.Errorf("read on the moved-out descriptor: %q, want in", got)
	}

	c, err := MoveIn(moved)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := setsHolding(t, fd); n != 1 {
		t.Errorf("after MoveIn the socket is in %d epoll sets, want 1 (Go's netpoller)", n)
	}
	if _, err := c.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	expect(t, b, "back")
	if _, err := b.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "again" {
		t.Errorf("the moved-in connection read %q, %v; want again", got, err)
	}
	if moved != fdOf(t, c.(syscall.Conn)) {
		if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(moved), syscall.F_GETFD, 0); e != syscall.EBADF {
			t.Errorf("MoveIn left descriptor %d open (fcntl: %v)", moved, e)
		}
	}
}

func TestMoveFailures(t *testing.T) {
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if _, err := MoveOut(p); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("MoveOut of a pipe = %v, want ErrUnsupported", err)
	}
	a, _ := loopback.Pair(t)
	_ = a.Close()
	if _, err := MoveOut(a); err == nil {
		t.Error("MoveOut of a closed connection succeeded")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd, err := dupCloexec(int(r.Fd()))
	_ = r.Close()
	if err != nil {
		t.Fatal(err)
	}
	// r.Fd made the descriptor blocking: no netpoller would wait on it,
	// and a raw call on it could block.
	if c, err := MoveIn(fd); err == nil {
		c.Close()
		t.Error("MoveIn of a blocking descriptor made a connection")
	}
}

func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("the peer read %q, %v; want %q", got, err, want)
	}
}

// readRaw reads n bytes from the non-blocking descriptor fd, polling.
func readRaw(t *testing.T, fd, n int) string {
	t.Helper()
	var got []byte
	buf := make([]byte, n)
	for deadline := time.Now().Add(10 * time.Second); len(got) < n; {
		k, err := Read(fd, buf[:n-len(got)])
		switch {
		case errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline):
			time.Sleep(time.Millisecond)
		case err != nil:
			t.Fatalf("read: %v", err)
		default:
			got = append(got, buf[:k]...)
		}
	}
	return string(got)
}

// setsHolding counts the process's epoll sets that hold fd's socket.
func setsHolding(t *testing.T, fd int) int {
	t.Helper()
	sets, err := epollinfo.SetsHolding(fd)
	if err != nil {
		t.Skipf("cannot read the epoll sets from /proc: %v", err)
	}
	return len(sets)
}

// TestMoved: the stand-in fails every call as a closed connection does,
// and closes without error.
func TestMoved(t *testing.T) {
	m := Moved()
	if _, err := m.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read = %v, want net.ErrClosed", err)
	}
	if _, err := m.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write = %v, want net.ErrClosed", err)
	}
	if err := m.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetDeadline = %v, want net.ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	if got := m.RemoteAddr().String() + " " + m.LocalAddr().Network(); got != "moved moved" {
		t.Errorf("addresses: %q", got)
	}
}
