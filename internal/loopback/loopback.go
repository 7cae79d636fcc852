// Package loopback gives tests both ends of a real TCP connection on
// 127.0.0.1: the sockets the relay, the engine client and internal/rawio
// work raw. Only tests import it.
//
// Invariant: every connection it opens is closed when its test ends.
package loopback

import (
	"net"
	"testing"
)

// Pair returns both ends of a loopback TCP connection, the dialled one
// first; both are closed when the test ends.
func Pair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}
