package rawio

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
)

// TestRawCalls: the raw read, write and epoll wait behave as the
// syscall package's do on a non-blocking socket: EAGAIN when there is
// nothing to read, the bytes written read back, and the set reporting the
// socket readable, then nothing once drained (edge-triggered).
func TestRawCalls(t *testing.T) {
	a, b := loopback.Pair(t)
	afd, bfd := fdOf(t, a), fdOf(t, b)
	buf := make([]byte, 64)
	if n, err := Read(bfd, buf); !errors.Is(err, syscall.EAGAIN) || n != 0 {
		t.Fatalf("read of an empty socket = %d, %v; want 0, EAGAIN", n, err)
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(epfd)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | 1<<31, Fd: int32(bfd)} // edge-triggered
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, bfd, &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]syscall.EpollEvent, 4)
	if n, err := EpollWait(epfd, events); n != 0 || err != nil {
		t.Fatalf("epoll of a quiet socket = %d, %v; want 0, nil", n, err)
	}
	if n, err := Write(afd, []byte("data: 1\n\n")); n != 9 || err != nil {
		t.Fatalf("write = %d, %v; want 9, nil", n, err)
	}
	// Loopback delivers within the write, but poll a while all the same.
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; {
		if n, err = EpollWait(epfd, events); err != nil && !errors.Is(err, syscall.EINTR) {
			t.Fatal(err)
		}
		if n == 1 && int(events[0].Fd) != bfd {
			t.Fatalf("event for fd %d, want %d", events[0].Fd, bfd)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("the set never reported the written socket")
		}
	}
	if PeerClosed(bfd) {
		t.Fatal("PeerClosed with bytes waiting and the peer there")
	}
	if n, err := Read(bfd, buf); string(buf[:n]) != "data: 1\n\n" || err != nil {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
	if n, err := EpollWait(epfd, events); n != 0 || err != nil {
		t.Fatalf("epoll once drained = %d, %v; want 0, nil", n, err)
	}
	if n, err := Write(afd, nil); n != 0 || err != nil {
		t.Fatalf("an empty write = %d, %v", n, err)
	}
	if n, err := EpollWait(epfd, nil); n != 0 || err != nil {
		t.Fatalf("epoll into no room = %d, %v", n, err)
	}
}

// TestEpollWaitFor: the bounded wait returns nothing once its time has
// passed on a quiet set, and the written socket when there is one (a
// wait of a second that a written byte ends at once), and nothing into no
// room.
func TestEpollWaitFor(t *testing.T) {
	a, b := loopback.Pair(t)
	afd, bfd := fdOf(t, a), fdOf(t, b)
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(epfd)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(bfd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, bfd, &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]syscall.EpollEvent, 4)
	if n, err := EpollWaitFor(epfd, events, 1); n != 0 || (err != nil && !errors.Is(err, syscall.EINTR)) {
		t.Fatalf("a bounded wait on a quiet socket = %d, %v; want 0", n, err)
	}
	if n, err := Write(afd, []byte("x")); n != 1 || err != nil {
		t.Fatalf("write = %d, %v; want 1, nil", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; {
		if n, err = EpollWaitFor(epfd, events, 1000); err != nil && !errors.Is(err, syscall.EINTR) {
			t.Fatal(err)
		}
		if n == 1 && int(events[0].Fd) != bfd {
			t.Fatalf("event for fd %d, want %d", events[0].Fd, bfd)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("the wait never reported the written socket")
		}
	}
	if n, err := EpollWaitFor(epfd, nil, 1000); n != 0 || err != nil {
		t.Fatalf("a wait into no room = %d, %v; want 0, nil at once", n, err)
	}
}

// fdOf returns c's descriptor, non-blocking as Go's net package opens it.
func fdOf(t testing.TB, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil {
		t.Fatal(err)
	}
	return fd
}
