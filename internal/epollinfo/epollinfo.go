// Package epollinfo reads, from /proc/self, which of the process's epoll
// sets hold a descriptor's file: for tests that check which sets see a
// socket's events (Go's netpoller's, a relay loop's). A test helper: the
// product does not import it.
//
// Invariant: it only reads /proc; it changes nothing.
package epollinfo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// SetsHolding returns the descriptors of the process's epoll sets that
// hold fd's file, read from each set's /proc/self/fdinfo ("tfd: %d ...
// ino:%x" lines), in ascending order. A socket is told by its inode,
// under whatever descriptor it was added; the files of anonymous inodes
// (an epoll set, an eventfd) all share one, so those are told by the
// descriptor they were added under too, which must be fd.
func SetsHolding(fd int) ([]int, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("epollinfo: fstat %d: %w", fd, err)
	}
	want := entry{ino: "ino:" + strconv.FormatUint(st.Ino, 16)}
	if link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); strings.HasPrefix(link, "anon_inode:") {
		want.tfd = strconv.Itoa(fd)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("epollinfo: %w", err)
	}
	var sets []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link != "anon_inode:[eventpoll]" {
			continue
		}
		held, err := holds(n, want)
		if err != nil {
			return nil, err
		}
		if held {
			sets = append(sets, n)
		}
	}
	slices.Sort(sets)
	return sets, nil
}

// ErrNoInodes: the kernel's epoll fdinfo lines name no inodes (older
// kernels), so what a set holds cannot be told.
var ErrNoInodes = errors.New("epollinfo: the kernel's epoll fdinfo names no inodes")

// entry is what identifies a file in an epoll set's fdinfo: its inode,
// and the descriptor it was added under ("" for any).
type entry struct{ ino, tfd string }

// holds reports whether the epoll set epfd has an entry like want.
func holds(epfd int, want entry) (bool, error) {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return false, nil // closed since it was listed
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "tfd:" {
			continue
		}
		if !slices.ContainsFunc(f, func(s string) bool { return strings.HasPrefix(s, "ino:") }) {
			return false, ErrNoInodes
		}
		if slices.Contains(f, want.ino) && (want.tfd == "" || f[1] == want.tfd) {
			return true, nil
		}
	}
	return false, nil
}
