// Package testlog collects what a process or a Run writes, from any
// goroutine, and lets a test wait for a line: the end-to-end tests read
// the real binary's output with it, and command's tests the output of an
// in-process Run. Only tests import it.
package testlog

import (
	"bufio"
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is an io.Writer safe for concurrent use that wakes the tests
// waiting on it at every write.
type Buffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	change chan struct{} // closed and replaced on every write
	closed bool
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{change: make(chan struct{})} }

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.wake()
	return len(p), nil
}

// Close records that nothing more will be written: a wait for a line not
// there fails at once.
func (b *Buffer) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.wake()
}

func (b *Buffer) wake() {
	close(b.change)
	b.change = make(chan struct{})
}

// String returns everything written.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines that contain substr.
func (b *Buffer) Lines(substr string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// WaitFor returns the first line that contains substr, waiting for it up
// to limit. It fails the test when the limit passes, or at once when the
// Buffer was closed without the line, showing what was written.
func (b *Buffer) WaitFor(t testing.TB, substr string, limit time.Duration) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		b.mu.Lock()
		ch, closed := b.change, b.closed
		b.mu.Unlock()
		if l := b.Lines(substr); len(l) > 0 {
			return l[0]
		}
		if closed {
			t.Fatalf("the output ended without a line with %q:\n%s", substr, b.String())
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no line with %q within %s:\n%s", substr, limit, b.String())
		}
	}
}
