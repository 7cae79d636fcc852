package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// bound is how long any wait in these tests may last before it is a
// failure.
const bound = 10 * time.Second

// TestAnswerBodyClosedEarlyDoesNotDrain: closing an engine answer before
// its end, with the request's context still live (ReverseProxy does so
// when writing to the client fails), returns at once and closes the engine
// connection; it does not read the rest of an endless stream.
func TestAnswerBodyClosedEarlyDoesNotDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	engineSawClose := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := io.WriteString(c, "d\r\ndata: token\n\n\r\n"); err != nil {
				close(engineSawClose)
				return
			}
		}
	})
	c := newTestClient(t, ln.Addr().String())
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
		"http://"+ln.Addr().String()+"/v1/completions", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: token\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() { _ = resp.Body.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(bound):
		t.Fatal("Close of an unfinished stream did not return: it drains the stream")
	}
	select {
	case <-engineSawClose:
	case <-time.After(bound):
		t.Fatal("the engine never saw the connection closed")
	}
	if n := len(c.direct.pool.idle); n != 0 {
		t.Errorf("%d connections back in the pool, want none", n)
	}
}

// newTestClient returns a Client of http://host, closed at the end of the
// test.
func newTestClient(t *testing.T, host string) *Client {
	t.Helper()
	c, err := New(Options{URL: &url.URL{Scheme: "http", Host: host}, Pool: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestWithPort: an engine URL without a port is dialled on port 80, as
// net/http's transport does.
func TestWithPort(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8000": "127.0.0.1:8000",
		"engine":         "engine:80",
		"[::1]:8000":     "[::1]:8000",
		"[::1]":          "[::1]:80",
	} {
		if got := withPort(in, "80"); got != want {
			t.Errorf("withPort(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPeekOnlyAfterASecondIdle: a pooled connection idle for less than
// peekAfter is taken without a look at its socket, even one the engine
// closed (the stale-connection retry covers that), unless the request
// cannot be sent again (peek); one idle for longer is looked at too. The
// look is the write's: it finds the engine's close and writes nothing
// (errEngineClosed), and the exchange passes on to another connection.
func TestPeekOnlyAfterASecondIdle(t *testing.T) {
	tests := []struct {
		name     string
		idleFor  time.Duration
		peek     bool
		wantPeek bool
	}{
		{name: "idle briefly: taken unchecked", idleFor: 0},
		{name: "idle briefly, not replayable: looked at", idleFor: 0, peek: true, wantPeek: true},
		{name: "idle past peekAfter: looked at", idleFor: 2 * peekAfter, wantPeek: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln := closingListener(t) // the engine closes every connection at once
			c := newTestClient(t, ln.Addr().String())
			ec, reused, err := c.direct.get(t.Context(), false)
			if err != nil || reused {
				t.Fatalf("first get: reused %v, %v; want a new connection", reused, err)
			}
			for deadline := time.Now().Add(bound); !PeerClosed(ec.c); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the engine's close never arrived")
				}
			}
			c.direct.pool.put(ec)
			ec.idle = time.Now().Add(-tc.idleFor)
			got, reused, err := c.direct.get(t.Context(), tc.peek)
			if err != nil {
				t.Fatal(err)
			}
			defer got.c.Close()
			if !reused || got != ec || got.peek != tc.wantPeek {
				t.Fatalf("get after %s idle: reused %v, same connection %v, look %v; want the pooled one, look %v",
					tc.idleFor, reused, got == ec, got.peek, tc.wantPeek)
			}
			_, err = got.send(nil, []byte("POST / HTTP/1.1\r\nHost: e\r\nContent-Length: 0\r\n\r\n"), 4096)
			if closed := errors.Is(err, errEngineClosed); closed != tc.wantPeek || got.wrote == tc.wantPeek {
				t.Errorf("send: %v, written %v; want errEngineClosed %v, written %v", err, got.wrote, tc.wantPeek, !tc.wantPeek)
			}
		})
	}
}

// closingListener accepts connections and closes each at once.
func closingListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln
}

// TestInMemoryBodyGoesOutInOneWrite: a request with its body in memory
// reaches the engine socket in one write with its headers, on the
// hand-written path up to 256 KiB, and on net/http's path when it fits
// net/http's write buffer. A larger body streams through a 16 KiB buffer,
// never copied whole.
func TestInMemoryBodyGoesOutInOneWrite(t *testing.T) {
	srv := echoServer(t)
	tests := []struct {
		name string
		size int
		host string // the request's host: the engine's takes the hand-written path
		// minWrites and maxWrites bound the writes: more than one only
		// for a body that streams.
		minWrites, maxWrites int
	}{
		{name: "hand-written, small", size: 100, host: srv, maxWrites: 1},
		{name: "hand-written, 60 KiB", size: 60 << 10, host: srv, maxWrites: 1},
		{name: "hand-written, 256 KiB", size: 256 << 10, host: srv, maxWrites: 1},
		{name: "hand-written, 1 MiB, streamed", size: 1 << 20, host: srv, minWrites: 2, maxWrites: 1<<20/StreamBuf + 1},
		{name: "net/http, small", size: 100, host: "localhost:" + portOf(t, srv), maxWrites: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, srv)
			var writes writeCount
			c.direct.dial = writes.dial(c.direct.dial)
			c.tr.DialContext = writes.dial(c.tr.DialContext)
			body := []byte(strings.Repeat("x", tc.size))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+tc.host+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = int64(len(body))
			resp, err := c.Do(req, body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || len(got) != tc.size {
				t.Fatalf("engine echoed %d bytes, %v; want %d", len(got), err, tc.size)
			}
			if n := writes.n(); n < max(tc.minWrites, 1) || n > tc.maxWrites {
				t.Errorf("the request went out in %d writes, want %d to %d", n, max(tc.minWrites, 1), tc.maxWrites)
			}
		})
	}
}

// echoServer answers every request with its body, on 127.0.0.1.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: bound, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // whole, before the answer: net/http is not full duplex
		_, _ = w.Write(b)
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
	return ln.Addr().String()
}

func portOf(t *testing.T, hostport string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// writeCount counts the writes on the connections it dials.
type writeCount struct {
	mu     sync.Mutex
	writes int
}

func (w *writeCount) n() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

func (w *writeCount) dial(next func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countedConn{Conn: c, w: w}, nil
	}
}

type countedConn struct {
	net.Conn
	w *writeCount
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.writes++
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// TestClosedPooledConnectionsPassedOver: a request that cannot be sent
// again passes over every pooled connection the engine closed while idle
// (each found by the write's look, nothing written) and goes out on a new
// one, however many the pool held: they are not tries.
func TestClosedPooledConnectionsPassedOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const closed = 3
	srv := &http.Server{ReadHeaderTimeout: bound, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "served")
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(&closeFirst{Listener: ln, n: closed}) })
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })

	c := newTestClient(t, ln.Addr().String())
	var idle []*conn
	for range closed {
		ec, _, err := c.direct.get(t.Context(), false)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, ec)
	}
	for _, ec := range idle {
		for deadline := time.Now().Add(bound); !PeerClosed(ec.c); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the engine's close never arrived")
			}
		}
		c.direct.pool.put(ec)
	}
	raw := []byte("POST / HTTP/1.1\r\nHost: e\r\nContent-Length: 0\r\n\r\n")
	resp, err := c.SendRaw(&Cut{}, raw, false)
	if err != nil {
		t.Fatalf("SendRaw over %d closed pooled connections: %v", closed, err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || string(b) != "served" {
		t.Errorf("answer %q, %v; want served", b, err)
	}
}

// closeFirst is a listener that closes the first n connections it
// accepts and hands on the rest.
type closeFirst struct {
	net.Listener
	n int
}

func (l *closeFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.n == 0 {
			return c, err
		}
		l.n--
		_ = c.Close()
	}
}
