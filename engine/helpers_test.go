package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
)

// bound is how long any wait in these tests may last before it is a
// failure. It bounds waits; no assertion depends on elapsed time.
const bound = 10 * time.Second

// rawEngine is an HTTP/1.1 engine written by hand over TCP, so a test can
// answer each request on a connection as it likes. answer gets the
// connection's request count (from 1) and the request, and writes what it
// wants; it returns false to close the connection without more.
type rawEngine struct {
	ln       net.Listener
	conns    atomic.Int64
	requests atomic.Int64
	answer   func(w *bufio.Writer, n int, req *http.Request) bool
	closed   chan struct{} // one value each time the engine closes a connection
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn // closed at the end of the test
	bodies   []string   // of every request, in order
}

func newRawEngine(t *testing.T, answer func(w *bufio.Writer, n int, req *http.Request) bool) *rawEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEngine{ln: ln, answer: answer, closed: make(chan struct{}, 100)}
	e.wg.Go(e.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		e.mu.Lock()
		for _, c := range e.open {
			_ = c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *rawEngine) url() *url.URL { return &url.URL{Scheme: "http", Host: e.ln.Addr().String()} }

func (e *rawEngine) accept() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.conns.Add(1)
		e.mu.Lock()
		e.open = append(e.open, c)
		e.mu.Unlock()
		e.wg.Go(func() { e.serve(c) })
	}
}

func (e *rawEngine) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		select {
		case e.closed <- struct{}{}:
		default:
		}
	}()
	_ = c.SetDeadline(time.Now().Add(bound))
	br, bw := bufio.NewReader(c), bufio.NewWriter(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		e.mu.Lock()
		e.bodies = append(e.bodies, string(b))
		e.mu.Unlock()
		e.requests.Add(1)
		if !e.answer(bw, n, req) {
			return
		}
		if bw.Flush() != nil {
			return
		}
	}
}

func (e *rawEngine) body(i int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.bodies) {
		return ""
	}
	return e.bodies[i]
}

// dropSecond answers a connection's first request and closes it on its
// second, read and unanswered: to the client, an engine that may have
// begun the request.
func dropSecond(w *bufio.Writer, n int, _ *http.Request) bool {
	if n == 2 {
		return false
	}
	ok200(w, "{}")
	return true
}

func ok200(w *bufio.Writer, body string) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// newClient returns a Client of opts, closed at the end of the test.
func newClient(t testing.TB, opts engine.Options) *engine.Client {
	t.Helper()
	c, err := engine.New(opts)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// result is an answer read to its end, or the error that prevented it.
type result struct {
	status int
	body   string
	err    error
}

// post sends body to u's /v1/completions with ctx, held in memory.
func post(ctx context.Context, c *engine.Client, u *url.URL, body string) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.JoinPath("/v1/completions").String(),
		bytes.NewReader([]byte(body)))
	if err != nil {
		return result{err: err}
	}
	return read(c.Do(req, []byte(body)))
}

// postWith sends body to u with the given headers.
func postWith(ctx context.Context, c *engine.Client, u *url.URL, body string, header http.Header) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.JoinPath("/v1/completions").String(),
		bytes.NewReader([]byte(body)))
	if err != nil {
		return result{err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return read(c.Do(req, []byte(body)))
}

// postStreamed sends body to u as a stream of unknown length, which takes
// net/http's path.
func postStreamed(ctx context.Context, c *engine.Client, u *url.URL, body string) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.JoinPath("/v1/completions").String(),
		io.MultiReader(bytes.NewReader([]byte(body))))
	if err != nil {
		return result{err: err}
	}
	return read(c.Do(req, nil))
}

func read(resp *http.Response, err error) result {
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: string(b), err: err}
}

// receive waits for one value from ch, failing the test after bound.
func receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("timed out after %s waiting for %s", bound, what)
		panic("unreachable")
	}
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", bound, what)
		}
		<-tick.C
	}
}
