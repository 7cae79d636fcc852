package engine_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slotgate/slotgate/engine"
)

// TestDoReusesConnections: requests one after another go over one
// keep-alive connection to the engine.
func TestDoReusesConnections(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool { ok200(w, `{"n":1}`); return true })
	c := newClient(t, engine.Options{URL: eng.url()})
	for i := range 20 {
		if r := post(t.Context(), c, eng.url(), `{"prompt":"hi"}`); r.err != nil || r.status != http.StatusOK || r.body != `{"n":1}` {
			t.Fatalf("request %d: %d %q %v", i, r.status, r.body, r.err)
		}
	}
	if n := eng.conns.Load(); n != 1 {
		t.Errorf("20 requests in turn used %d engine connections, want 1", n)
	}
}

// TestDoEngineClosesAfterEachAnswer: an engine that closes every
// connection after answering, without saying so, fails nothing: the
// request that finds the connection closed is sent again on a new one.
func TestDoEngineClosesAfterEachAnswer(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
		ok200(w, "{}")
		_ = w.Flush()
		return false
	})
	c := newClient(t, engine.Options{URL: eng.url()})
	for i := range 5 {
		if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, r.status, r.err)
		}
		// The close has left, as it would have between requests.
		receive(t, "the engine to close the connection", eng.closed)
	}
	if n := eng.conns.Load(); n != 5 {
		t.Errorf("5 requests used %d engine connections, want 5", n)
	}
}

// TestDoRetriesStaleConnectionOnce: when the engine closes a kept-alive
// connection just as a replayable request (here a POST with an
// idempotency key) arrives on it, answering nothing, the request is sent
// once more, with its whole body, on a new connection; an engine that
// breaks a new connection fails the request, with no second try.
func TestDoRetriesStaleConnectionOnce(t *testing.T) {
	key := http.Header{"Idempotency-Key": {"k"}}
	post := func(ctx context.Context, c *engine.Client, u *url.URL, body string) result {
		return postWith(ctx, c, u, body, key)
	}
	eng := newRawEngine(t, dropSecond)
	c := newClient(t, engine.Options{URL: eng.url()})
	bodies := []string{`{"prompt":"one"}`, `{"prompt":"two"}`}
	for i, body := range bodies {
		if r := post(t.Context(), c, eng.url(), body); r.err != nil || r.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, r.status, r.err)
		}
	}
	if n, reqs := eng.conns.Load(), eng.requests.Load(); n != 2 || reqs != 3 {
		t.Errorf("engine: %d connections, %d requests; want 2 and 3 (one retry)", n, reqs)
	}
	if got := eng.body(2); got != bodies[1] {
		t.Errorf("the retried request's body = %q, want %q", got, bodies[1])
	}

	broken := newRawEngine(t, func(*bufio.Writer, int, *http.Request) bool { return false })
	c2 := newClient(t, engine.Options{URL: broken.url()})
	if r := post(t.Context(), c2, broken.url(), "{}"); r.err == nil {
		t.Errorf("engine that closes a new connection: status %d, want an error", r.status)
	}
	if n := broken.requests.Load(); n != 1 {
		t.Errorf("the broken engine got the request %d times, want 1 (no retry on a new connection)", n)
	}
}

// TestDoGenerationNotResent: a generation (a POST without an idempotency
// key) that the engine read and then dropped, answering nothing, is never
// sent again: the engine may have begun it, and a second copy would run
// beside the first, past slotgate's cap.
func TestDoGenerationNotResent(t *testing.T) {
	eng := newRawEngine(t, dropSecond)
	c := newClient(t, engine.Options{URL: eng.url()})
	if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("first request: %d %v", r.status, r.err)
	}
	if r := post(t.Context(), c, eng.url(), "{}"); r.err == nil {
		t.Errorf("a dropped generation: status %d, want an error", r.status)
	}
	if n := eng.requests.Load(); n != 2 {
		t.Errorf("engine got %d requests, want 2: a generation it read is never resent", n)
	}
}

// TestDoPartialAnswerNotRetried: an engine that sends part of an answer
// and closes is not sent the request again.
func TestDoPartialAnswerNotRetried(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, n int, _ *http.Request) bool {
		if n == 1 {
			ok200(w, "{}")
			return true
		}
		_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Le")
		_ = w.Flush()
		return false
	})
	c := newClient(t, engine.Options{URL: eng.url()})
	if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("first request: %d %v", r.status, r.err)
	}
	if r := post(t.Context(), c, eng.url(), "{}"); r.err == nil {
		t.Errorf("a broken answer: status %d, want an error", r.status)
	}
	if n := eng.requests.Load(); n != 2 {
		t.Errorf("engine got %d requests, want 2: a request it began to answer is never resent", n)
	}
}

// TestDoInterimAnswers: 103 Early Hints before the answer are passed
// over; the final answer is returned.
func TestDoInterimAnswers(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
		_, _ = w.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
		ok200(w, `{"final":true}`)
		return true
	})
	c := newClient(t, engine.Options{URL: eng.url()})
	if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK || r.body != `{"final":true}` {
		t.Errorf("answer %d %q %v, want 200 with the final body", r.status, r.body, r.err)
	}
}

// TestDoConnectionCloseNotPooled: an answer read to its end goes back to
// the pool only when the engine keeps its connection.
func TestDoConnectionCloseNotPooled(t *testing.T) {
	tests := []struct {
		name      string
		header    string
		wantConns int64
	}{
		{name: "keep-alive", header: "", wantConns: 1},
		{name: "Connection: close", header: "Connection: close\r\n", wantConns: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
				_, _ = w.WriteString("HTTP/1.1 200 OK\r\n" + tc.header + "Content-Length: 2\r\n\r\n{}")
				return true // the engine keeps it open even so: the client must not
			})
			c := newClient(t, engine.Options{URL: eng.url()})
			for i := range 3 {
				if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK {
					t.Fatalf("request %d: %d %v", i, r.status, r.err)
				}
			}
			if n := eng.conns.Load(); n != tc.wantConns {
				t.Errorf("3 requests used %d connections, want %d", n, tc.wantConns)
			}
		})
	}
}

// TestDoCancelledStreamNotReused: a caller that cancels in the middle of
// a stream cuts the engine connection, which is not put back in the pool;
// the next request gets a new one and is served.
func TestDoCancelledStreamNotReused(t *testing.T) {
	gone := make(chan struct{}, 1)
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: one\n\n")
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done()
			gone <- struct{}{}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	c := newClient(t, engine.Options{URL: srv})

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.JoinPath("/stream").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("reading the stream after the cancel succeeded, want the connection cut")
	}
	_ = resp.Body.Close()
	receive(t, "the engine to see the stream cancelled", gone)
	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, srv.JoinPath("/after").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := read(c.Do(req, nil)); r.err != nil || r.status != http.StatusOK || r.body != "ok" {
		t.Fatalf("after the cancelled stream: %d %q %v", r.status, r.body, r.err)
	}
	if n := conns.opened.Load(); n != 2 {
		t.Errorf("engine connections = %d, want 2: the cancelled stream's is not reused", n)
	}
}

// TestDoCancelWhileWaiting: the end of the request's context ends a wait
// for the engine's answer at once, with the context's error, and the
// request is not sent again.
func TestDoCancelWhileWaiting(t *testing.T) {
	var requests atomic.Int64
	arrived := make(chan struct{}, 1)
	srv, _ := countingServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // net/http sees a client leave only after the body
		arrived <- struct{}{}
		<-r.Context().Done() // never answers
	}))
	c := newClient(t, engine.Options{URL: srv})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() { done <- post(ctx, c, srv, "{}") }()
	receive(t, "the request to reach the engine", arrived)
	cancel()
	if r := receive(t, "Do to return after the cancel", done); !errors.Is(r.err, context.Canceled) {
		t.Errorf("Do after its context was cancelled: %d %v, want context.Canceled", r.status, r.err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("engine got %d requests, want 1", n)
	}
}

// TestDoStreamedBody: a body that is not in memory streams through
// net/http's path and reaches the engine whole, even without a declared
// length.
func TestDoStreamedBody(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool { ok200(w, "{}"); return true })
	c := newClient(t, engine.Options{URL: eng.url()})
	const body = `{"prompt":"streamed"}`
	if r := postStreamed(t.Context(), c, eng.url(), body); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("streamed request: %d %v", r.status, r.err)
	}
	if got := eng.body(0); got != body {
		t.Errorf("engine got body %q, want %q", got, body)
	}
}

// TestDoBodyLengthMismatch: an in-memory body that is not the request's
// declared length is refused before anything reaches the engine.
func TestDoBodyLengthMismatch(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool { ok200(w, "{}"); return true })
	c := newClient(t, engine.Options{URL: eng.url()})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, eng.url().String(), strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Do(req, []byte("{ }")); err == nil {
		_ = resp.Body.Close()
		t.Error("Do with a 3-byte body for a 2-byte request succeeded, want an error")
	}
	if n := eng.conns.Load(); n != 0 {
		t.Errorf("engine got %d connections, want none", n)
	}
}

// connCounts counts a server's connections as they open and close.
type connCounts struct{ opened, closed atomic.Int64 }

// countingServer starts an httptest server of h that counts its
// connections.
func countingServer(t *testing.T, h http.Handler) (*url.URL, *connCounts) {
	t.Helper()
	var n connCounts
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			n.closed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u, &n
}
