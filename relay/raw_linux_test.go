package relay

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestRawCalls: the raw read, write and epoll wait behave as the
// syscall package's do on a non-blocking socket: EAGAIN when there is
// nothing to read, the bytes written read back, and the set reporting the
// socket readable, then nothing once drained (edge-triggered).
func TestRawCalls(t *testing.T) {
	a, b := tcpPair(t)
	afd, err := fdOf(a)
	if err != nil {
		t.Fatal(err)
	}
	bfd, err := fdOf(b)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := readRaw(bfd, buf); !errors.Is(err, syscall.EAGAIN) || n != 0 {
		t.Fatalf("read of an empty socket = %d, %v; want 0, EAGAIN", n, err)
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(epfd)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | edgeTriggered, Fd: int32(bfd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, bfd, &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]syscall.EpollEvent, 4)
	if n, err := epollNow(epfd, events); n != 0 || err != nil {
		t.Fatalf("epoll of a quiet socket = %d, %v; want 0, nil", n, err)
	}
	if n, err := writeRaw(afd, []byte("data: 1\n\n")); n != 9 || err != nil {
		t.Fatalf("write = %d, %v; want 9, nil", n, err)
	}
	// Loopback delivers within the write, but poll a while all the same.
	deadline := time.Now().Add(wait)
	for n := 0; n == 0; {
		if n, err = epollNow(epfd, events); err != nil {
			t.Fatal(err)
		}
		if n == 1 && int(events[0].Fd) != bfd {
			t.Fatalf("event for fd %d, want %d", events[0].Fd, bfd)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("the set never reported the written socket")
		}
	}
	if n, err := readRaw(bfd, buf); string(buf[:n]) != "data: 1\n\n" || err != nil {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
	if n, err := epollNow(epfd, events); n != 0 || err != nil {
		t.Fatalf("epoll once drained = %d, %v; want 0, nil", n, err)
	}
	if n, err := writeRaw(afd, nil); n != 0 || err != nil {
		t.Fatalf("an empty write = %d, %v", n, err)
	}
}
