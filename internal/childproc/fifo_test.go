package childproc_test

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// holdLimit bounds each wait on a "hold" grandchild: a failing test ends
// instead of hanging.
const holdLimit = 10 * time.Second

// holder tells when a "hold" grandchild opened its FIFO and when every
// holder of the FIFO's writing end ended: the kernel closes a process's
// files when it dies, so the reader sees the end of the FIFO then, with no
// polling.
type holder struct {
	path   string
	opened chan struct{}
	closed chan struct{}
}

// newHolder makes a FIFO and starts reading it; the env is what a "hold"
// child needs to find it.
func newHolder(t *testing.T) *holder {
	t.Helper()
	h := &holder{path: filepath.Join(t.TempDir(), "hold.fifo"), opened: make(chan struct{}), closed: make(chan struct{})}
	if err := syscall.Mkfifo(h.path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// This goroutine ends when the FIFO's last writer closes it; the
	// cleanup opens and closes a writing end so that it ends even when no
	// grandchild ever came, and waits for it (bounded: a grandchild that
	// outlived a failed test holds it open).
	go func() {
		defer close(h.closed)
		f, err := os.Open(h.path) // blocks until a writer opens it
		if err != nil {
			return
		}
		defer f.Close()
		close(h.opened)
		_, _ = io.Copy(io.Discard, f)
	}()
	t.Cleanup(func() {
		if w, err := os.OpenFile(h.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case <-h.closed:
		case <-time.After(holdLimit):
		}
	})
	return h
}

func (h *holder) env() []string { return []string{envFIFO, h.path} }

// waitOpened fails the test unless a grandchild opened the FIFO within
// holdLimit.
func (h *holder) waitOpened(t *testing.T) {
	t.Helper()
	select {
	case <-h.opened:
	case <-time.After(holdLimit):
		t.Fatalf("no grandchild opened %s within %s", h.path, holdLimit)
	}
}

// waitClosed fails the test unless every grandchild holding the FIFO
// ended within holdLimit.
func (h *holder) waitClosed(t *testing.T, why string) {
	t.Helper()
	select {
	case <-h.closed:
	case <-time.After(holdLimit):
		t.Fatalf("the grandchild still runs %s after %s", holdLimit, why)
	}
}
