package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
)

// movedIn returns the far end of a loopback pair and the near end taken
// out and given back (MoveOut, MoveIn), with the near end's addresses.
func movedIn(t *testing.T) (c net.Conn, peer *net.TCPConn, local, remote net.Addr) {
	t.Helper()
	a, b := loopback.Pair(t)
	local, remote = a.LocalAddr(), a.RemoteAddr()
	fd, err := MoveOut(a)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = MoveIn(fd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, b, local, remote
}

// TestMovedInIsATCPConn: what MoveIn gives back behaves as the
// net.TCPConn it came from: the same addresses, deadlines that time out
// with os.ErrDeadlineExceeded, raw calls while open, a half-close, io.EOF
// itself at the peer's close, and net.ErrClosed from every call once
// closed (its raw calls too).
func TestMovedInIsATCPConn(t *testing.T) {
	c, peer, local, remote := movedIn(t)
	if c.LocalAddr().String() != local.String() || c.RemoteAddr().String() != remote.String() ||
		c.LocalAddr().Network() != "tcp" || c.RemoteAddr().Network() != "tcp" {
		t.Errorf("addresses %s %s -> %s %s, want tcp %s -> %s", c.LocalAddr().Network(), c.LocalAddr(), c.RemoteAddr().Network(), c.RemoteAddr(), local, remote)
	}

	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a read past its deadline: %v, want a timeout, os.ErrDeadlineExceeded", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Errorf("a read's error %#v, want a *net.OpError of read", err)
	}
	_ = c.SetReadDeadline(time.Time{})

	s := NewSocket(c)
	if !s.Usable() {
		t.Fatal("NewSocket of a moved-in connection is not usable")
	}
	if _, err := s.Write([]byte("raw")); err != nil {
		t.Fatal(err)
	}
	expect(t, peer, "raw")

	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := peer.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("the peer after CloseWrite read %d, %v; want io.EOF", n, err)
	}
	if _, err := peer.Write([]byte("still")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "still" {
		t.Errorf("read after CloseWrite: %q, %v; want still", got, err)
	}

	_ = peer.Close()
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a read after the peer's close: %d, %v; want io.EOF itself", n, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{"Close again": c.Close(), "SetDeadline": c.SetDeadline(time.Time{})}
	_, calls["Read"] = c.Read(make([]byte, 1))
	_, calls["Write"] = c.Write([]byte("x"))
	_, calls["the socket's raw read"] = s.Read(make([]byte, 1))
	for name, err := range calls {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
		}
	}
	if _, err := MoveOut(c); !errors.Is(err, net.ErrClosed) {
		t.Errorf("MoveOut of a closed connection: %v, want net.ErrClosed", err)
	}
}

// TestMovedInMovesAgain: a connection MoveIn gave back moves out and in
// again (a kept engine connection does at each of its streams), its bytes
// whole each way.
func TestMovedInMovesAgain(t *testing.T) {
	c, peer, _, _ := movedIn(t)
	for i := range 3 {
		fd, err := MoveOut(c)
		if err != nil {
			t.Fatalf("move %d out: %v", i, err)
		}
		if _, err := Write(fd, []byte("out")); err != nil {
			t.Fatal(err)
		}
		expect(t, peer, "out")
		if c, err = MoveIn(fd); err != nil {
			t.Fatalf("move %d in: %v", i, err)
		}
		if _, err := c.Write([]byte("in")); err != nil {
			t.Fatal(err)
		}
		expect(t, peer, "in")
	}
	_ = c.Close()
}

// TestAddrOf: the kernel's socket addresses as net's connections give
// them.
func TestAddrOf(t *testing.T) {
	tests := []struct {
		sa   syscall.Sockaddr
		want string
		net  string
	}{
		{&syscall.SockaddrInet4{Port: 8080, Addr: [4]byte{127, 0, 0, 1}}, "127.0.0.1:8080", "tcp"},
		{&syscall.SockaddrInet6{Port: 443, Addr: [16]byte{15: 1}}, "[::1]:443", "tcp"},
		{&syscall.SockaddrUnix{Name: "/run/engine.sock"}, "/run/engine.sock", "unix"},
		{nil, "unknown", "unknown"},
	}
	for _, tt := range tests {
		if a := addrOf(tt.sa); a.String() != tt.want || a.Network() != tt.net {
			t.Errorf("addrOf(%#v) = %s %s, want %s %s", tt.sa, a.Network(), a, tt.net, tt.want)
		}
	}
}
