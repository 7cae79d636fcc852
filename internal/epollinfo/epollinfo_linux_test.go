package epollinfo

import (
	"errors"
	"slices"
	"syscall"
	"testing"
)

// TestSetsHolding: a pipe added to an epoll set is found in that set and
// no other, under the descriptor of a duplicate too (the file is what
// counts), and in none once deleted; an epoll set inside another is told
// by its descriptor, since every epoll file shares one inode.
func TestSetsHolding(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	var q [2]int
	if err := syscall.Pipe2(q[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(q[0])
	defer syscall.Close(q[1])
	outer := epoll(t)
	inner := epoll(t)
	add(t, outer, p[0])
	add(t, outer, inner)
	dup, err := syscall.Dup(p[0])
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	for _, tc := range []struct {
		name string
		fd   int
		want []int
	}{
		{"the pipe", p[0], []int{outer}},
		{"the pipe, by a duplicate", dup, []int{outer}},
		{"another pipe", q[0], nil},
		{"the inner set", inner, []int{outer}},
		{"the outer set", outer, nil},
	} {
		got, err := SetsHolding(tc.fd)
		if errors.Is(err, ErrNoInodes) {
			t.Skipf("%v", err)
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: SetsHolding = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if err := syscall.EpollCtl(outer, syscall.EPOLL_CTL_DEL, p[0], nil); err != nil {
		t.Fatal(err)
	}
	if got, err := SetsHolding(p[0]); err != nil || len(got) != 0 {
		t.Errorf("after the delete: SetsHolding = %v, %v; want none", got, err)
	}
	if _, err := SetsHolding(-1); err == nil {
		t.Error("SetsHolding of a bad descriptor succeeded")
	}
}

func epoll(t *testing.T) int {
	t.Helper()
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

func add(t *testing.T, epfd, fd int) {
	t.Helper()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		t.Fatal(err)
	}
}
