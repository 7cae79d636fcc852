package engine_test

import (
	"net"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/internal/loopback"
)

// closedWithin polls PeerClosed, since a close takes a moment to arrive.
// Real sockets: synctest's fake clock does not reach them.
func closedWithin(c net.Conn, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		if engine.PeerClosed(c) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func TestPeerClosed(t *testing.T) {
	t.Run("open and idle", func(t *testing.T) {
		_, s := loopback.Pair(t)
		if engine.PeerClosed(s) {
			t.Error("an open, idle connection reads as closed")
		}
	})
	t.Run("bytes waiting are not consumed", func(t *testing.T) {
		c, s := loopback.Pair(t)
		if _, err := c.Write([]byte("GET")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the bytes arrive
		if engine.PeerClosed(s) {
			t.Error("a connection with bytes waiting reads as closed")
		}
		b := make([]byte, 3)
		_ = s.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := s.Read(b); n != 3 || string(b) != "GET" {
			t.Errorf("after the peek, read %q, %v; want the 3 bytes still there", b[:n], err)
		}
	})
	t.Run("closed by the peer", func(t *testing.T) {
		c, s := loopback.Pair(t)
		_ = c.Close()
		if !closedWithin(s, time.Second) {
			t.Error("a connection its peer closed does not read as closed")
		}
	})
	t.Run("reset by the peer", func(t *testing.T) {
		c, s := loopback.Pair(t)
		_ = c.SetLinger(0) // close with RST
		_ = c.Close()
		if !closedWithin(s, time.Second) {
			t.Error("a connection its peer reset does not read as closed")
		}
	})
	t.Run("not a socket", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		_ = b.Close()
		if engine.PeerClosed(a) {
			t.Error("a pipe reads as closed: only sockets can be peeked")
		}
	})
}
