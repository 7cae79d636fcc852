package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
)

// TestWatch: a watched socket fires once its peer hangs up, whether
// before the watch or during it; bytes from the peer do not fire it and
// stay unread; a watch stopped first never fires; and a stopped relay
// watches nothing.
func TestWatch(t *testing.T) {
	r, stop := startRelay(t, 1)
	fds := openFDs(t)
	tests := []struct {
		name string
		// before and during play the peer (a) before the watch begins
		// and while it runs.
		before, during func(t *testing.T, a net.Conn)
		fires          bool
	}{
		{name: "peer closes", during: closeConn, fires: true},
		{name: "peer closed before", before: closeConn, fires: true},
		{name: "peer resets", during: resetConn, fires: true},
		{name: "peer sends", during: func(t *testing.T, a net.Conn) {
			if _, err := a.Write([]byte("next request")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "peer stays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := loopback.Pair(t)
			if tc.before != nil {
				tc.before(t, a)
			}
			gone := make(chan struct{}, 2)
			w, err := r.Watch(b, func() { gone <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			if tc.during != nil {
				tc.during(t, a)
			}
			if tc.fires {
				select {
				case <-gone:
				case <-time.After(wait):
					t.Fatal("the watch did not fire when the peer hung up")
				}
			} else {
				select {
				case <-gone:
					t.Fatal("the watch fired while the peer was there")
				case <-time.After(quiet):
				}
			}
			if got := w.Stop(); got != tc.fires {
				t.Fatalf("Stop = %v, want %v", got, tc.fires)
			}
			if tc.name == "peer sends" {
				buf := make([]byte, 12)
				_ = b.SetReadDeadline(time.Now().Add(wait))
				if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "next request" {
					t.Fatalf("after the watch, the socket reads %q, %v", buf, err)
				}
			}
			if !tc.fires {
				// Stopped: a hang-up now goes unseen by the relay.
				closeConn(t, a)
				select {
				case <-gone:
					t.Fatal("a stopped watch fired")
				case <-time.After(quiet):
				}
			}
		})
	}
	// Each watch's duplicate descriptor is closed once the watch ends.
	for deadline := time.Now().Add(wait); openFDs(t) != fds; {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open after the watches ended, %d before", openFDs(t), fds)
		}
		time.Sleep(time.Millisecond)
	}
	_, b := loopback.Pair(t)
	stop()
	if _, err := r.Watch(b, func() {}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Watch on a stopped relay: %v, want ErrShutdown", err)
	}
}

// quiet is how long a test waits to see that nothing happens: the loop
// acts on an event within microseconds.
const quiet = 100 * time.Millisecond

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func closeConn(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// resetConn closes c with a reset (SO_LINGER 0).
func resetConn(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	closeConn(t, c)
}
