package engine

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/internal/loopback"
)

// socketPair returns both ends of a loopback TCP connection: the
// client's, as an engine connection, and the engine's.
func socketPair(t *testing.T) (*conn, *net.TCPConn) {
	t.Helper()
	c, s := loopback.Pair(t)
	ec := newConn(c)
	if !ec.sock.Usable() {
		t.Fatal("a TCP connection has no socket to work")
	}
	return ec, s
}

// readable reports whether ec's socket has bytes to read now, without
// waiting for any.
func readable(t *testing.T, ec *conn) bool {
	t.Helper()
	var b [1]byte
	var n int
	var err error
	if cerr := ec.sock.RawConn().Control(func(fd uintptr) {
		n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); cerr != nil {
		t.Fatal(cerr)
	}
	return n > 0 && err == nil
}

// TestWriteWait: the write that waits returns only once the engine's
// answer can be read, the request having gone out whole; a look first
// finds an engine that closed its side, and then writes nothing; a socket
// too full for the request gets the rest from Go's write; a deadline set
// while it waits (a Cut) is met by the read that follows.
func TestWriteWait(t *testing.T) {
	req := []byte("POST /v1/completions HTTP/1.1\r\nHost: e\r\nContent-Length: 2\r\n\r\n{}")

	t.Run("waits for the answer", func(t *testing.T) {
		ec, s := socketPair(t)
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, 4096)
			n, _ := io.ReadAtLeast(s, b, len(req))
			got <- b[:n]
			time.Sleep(20 * time.Millisecond) // the engine works
			_, _ = s.Write([]byte("HTTP/1.1 200 OK\r\n"))
		}()
		if err := ec.writeWait(req, false); err != nil {
			t.Fatal(err)
		}
		if !readable(t, ec) {
			t.Error("writeWait returned before the answer came")
		}
		if b := <-got; !bytes.Equal(b, req) {
			t.Errorf("the engine read %q, want %q", b, req)
		}
	})

	t.Run("a look finds the engine's close", func(t *testing.T) {
		ec, s := socketPair(t)
		_ = s.CloseWrite() // the engine's close, as a keep-alive timeout sends it
		waitFor(t, "the close to arrive", func() bool { return PeerClosed(ec.c) })
		if err := ec.writeWait(req, true); !errors.Is(err, errEngineClosed) {
			t.Fatalf("writeWait = %v, want errEngineClosed", err)
		}
		_ = s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := s.Read(make([]byte, 64)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the engine read %d bytes, %v; want none written", n, err)
		}
	})

	t.Run("a look finds the engine there", func(t *testing.T) {
		ec, s := socketPair(t)
		go func() {
			_, _ = io.ReadAtLeast(s, make([]byte, 4096), len(req))
			_, _ = s.Write([]byte("HTTP/1.1 200 OK\r\n"))
		}()
		if err := ec.writeWait(req, true); err != nil {
			t.Fatal(err)
		}
		if !readable(t, ec) {
			t.Error("writeWait returned before the answer came")
		}
	})

	t.Run("a full socket", func(t *testing.T) {
		ec, s := socketPair(t)
		_ = ec.c.(*net.TCPConn).SetWriteBuffer(64 << 10)
		_ = s.SetReadBuffer(64 << 10)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		got := make(chan []byte, 1)
		go func() {
			_ = s.SetReadDeadline(time.Now().Add(bound))
			b, _ := io.ReadAll(io.LimitReader(s, int64(len(big))))
			got <- b
			_, _ = s.Write([]byte("HTTP/1.1 200 OK\r\n"))
		}()
		if err := ec.writeWait(big, false); err != nil {
			t.Fatal(err)
		}
		if b := <-got; !bytes.Equal(b, big) {
			t.Errorf("the engine read %d bytes, not the %d written in order", len(b), len(big))
		}
	})

	t.Run("cut while waiting", func(t *testing.T) {
		ec, s := socketPair(t)
		go func() {
			_, _ = io.ReadAtLeast(s, make([]byte, 4096), len(req))
			_ = ec.c.SetDeadline(time.Unix(1, 0)) // the engine never answers; the client's Cut
		}()
		if err := ec.writeWait(req, false); err != nil {
			t.Fatalf("writeWait = %v; a cut after the write is the read's to meet", err)
		}
		if _, err := ec.reader().ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the read after the cut = %v, want a deadline exceeded", err)
		}
	})

	t.Run("a write the engine reset", func(t *testing.T) {
		ec, s := socketPair(t)
		_ = s.SetLinger(0)
		_ = s.Close()
		waitFor(t, "the reset to arrive", func() bool { return PeerClosed(ec.c) })
		err := ec.writeWait(req, false)
		if err == nil {
			_, err = ec.reader().ReadByte() // the write may go out before the reset is known
		}
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, io.EOF) {
			t.Errorf("writing to a reset connection: %v, want ECONNRESET, EPIPE or EOF", err)
		}
	})
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: bound, Every: time.Millisecond}.True(t, what, cond)
}
