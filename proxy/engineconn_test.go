package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// rawEngine is an HTTP/1.1 engine written by hand over TCP, so a test can
// answer each request on a connection as it likes. answer gets the
// connection's request count (from 1) and the request, and writes what it
// wants; it returns false to close the connection without more.
type rawEngine struct {
	ln       net.Listener
	conns    atomic.Int64
	requests atomic.Int64
	answer   func(w *bufio.Writer, n int, req *http.Request) bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn // closed at the end of the test
}

func newRawEngine(t *testing.T, answer func(w *bufio.Writer, n int, req *http.Request) bool) *rawEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEngine{ln: ln, answer: answer}
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

func (e *rawEngine) url(t *testing.T) *url.URL {
	u, err := url.Parse("http://" + e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

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
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(bound))
	br, bw := bufio.NewReader(c), bufio.NewWriter(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		e.requests.Add(1)
		if !e.answer(bw, n, req) {
			return
		}
		if bw.Flush() != nil {
			return
		}
	}
}

func ok200(w *bufio.Writer, body string) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func post(t *testing.T, h *harness, body string) result {
	t.Helper()
	return h.do(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(body)))
}

// TestDirectTransportReusesConnections: requests one after another go
// over one keep-alive connection to the engine.
func TestDirectTransportReusesConnections(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, n int, _ *http.Request) bool { ok200(w, `{"n":1}`); return true })
	h := newHarness(t, harnessConfig{engineURL: eng.url(t), limits: limiter.Options{Slots: 4}})
	for i := range 20 {
		if r := post(t, h, `{"prompt":"hi"}`); r.err != nil || r.status != http.StatusOK || r.body != `{"n":1}` {
			t.Fatalf("request %d: %d %q %v", i, r.status, r.body, r.err)
		}
	}
	if c := eng.conns.Load(); c != 1 {
		t.Errorf("20 requests in turn used %d engine connections, want 1", c)
	}
}

// TestDirectTransportEngineClosesAfterEachAnswer: an engine that closes
// every connection after answering, without saying so, fails nothing: the
// request that finds the connection closed is sent again on a new one.
func TestDirectTransportEngineClosesAfterEachAnswer(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
		ok200(w, "{}")
		_ = w.Flush()
		return false
	})
	h := newHarness(t, harnessConfig{engineURL: eng.url(t), limits: limiter.Options{Slots: 1}})
	for i := range 5 {
		if r := post(t, h, "{}"); r.err != nil || r.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, r.status, r.err)
		}
		time.Sleep(5 * time.Millisecond) // the close arrives, as it would between requests
	}
	if c := eng.conns.Load(); c != 5 {
		t.Errorf("5 requests used %d engine connections, want 5", c)
	}
}

// TestDirectTransportRetriesStaleConnectionOnce: when the engine closes a
// kept-alive connection just as a request arrives on it, answering
// nothing, the request is sent once more on a new connection; an engine
// that breaks a new connection is answered 502, with no second try.
func TestDirectTransportRetriesStaleConnectionOnce(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, n int, _ *http.Request) bool {
		if n == 2 {
			return false // the second request on any connection: closed unanswered
		}
		ok200(w, "{}")
		return true
	})
	h := newHarness(t, harnessConfig{engineURL: eng.url(t), limits: limiter.Options{Slots: 1}})
	for i := range 2 {
		if r := post(t, h, "{}"); r.err != nil || r.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, r.status, r.err)
		}
	}
	if c, n := eng.conns.Load(), eng.requests.Load(); c != 2 || n != 3 {
		t.Errorf("engine: %d connections, %d requests; want 2 and 3 (one retry)", c, n)
	}

	broken := newRawEngine(t, func(*bufio.Writer, int, *http.Request) bool { return false })
	h2 := newHarness(t, harnessConfig{engineURL: broken.url(t), limits: limiter.Options{Slots: 1}})
	if r := post(t, h2, "{}"); r.status != http.StatusServiceUnavailable && r.status != http.StatusBadGateway {
		t.Errorf("engine that closes a new connection: status %d, want 502 or 503", r.status)
	}
	if n := broken.requests.Load(); n != 1 {
		t.Errorf("the broken engine got the request %d times, want 1 (no retry on a new connection)", n)
	}
}

// TestDirectTransportPartialAnswerNotRetried: an engine that sends part of
// an answer and closes is not sent the request again.
func TestDirectTransportPartialAnswerNotRetried(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, n int, _ *http.Request) bool {
		if n == 1 {
			ok200(w, "{}")
			return true
		}
		_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Le")
		_ = w.Flush()
		return false
	})
	h := newHarness(t, harnessConfig{engineURL: eng.url(t), limits: limiter.Options{Slots: 1}})
	if r := post(t, h, "{}"); r.status != http.StatusOK {
		t.Fatalf("first request: %d %v", r.status, r.err)
	}
	if r := post(t, h, "{}"); r.status != http.StatusBadGateway && r.status != http.StatusServiceUnavailable {
		t.Errorf("a broken answer: status %d, want 502 or 503", r.status)
	}
	if n := eng.requests.Load(); n != 2 {
		t.Errorf("engine got %d requests, want 2: a request it began to answer is never resent", n)
	}
}

// TestDirectTransportInterimAnswers: 103 Early Hints before the answer
// are passed over; the final answer reaches the client.
func TestDirectTransportInterimAnswers(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
		_, _ = w.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
		ok200(w, `{"final":true}`)
		return true
	})
	h := newHarness(t, harnessConfig{engineURL: eng.url(t), limits: limiter.Options{Slots: 1}})
	if r := post(t, h, "{}"); r.status != http.StatusOK || r.body != `{"final":true}` {
		t.Errorf("answer %d %q %v, want 200 with the final body", r.status, r.body, r.err)
	}
}

// TestDirectTransportCancelledStreamNotReused: a client that leaves in
// the middle of a stream cuts the engine connection, which is not put
// back in the pool; the next request gets a new one and is served.
func TestDirectTransportCancelledStreamNotReused(t *testing.T) {
	var streams atomic.Int64
	gone := make(chan struct{}, 1)
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			streams.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: one\n\n")
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done()
			gone <- struct{}{}
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := httptest.NewUnstartedServer(engine)
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	h := newHarness(t, harnessConfig{engineURL: u, limits: limiter.Options{Slots: 1}})

	ctx, cancel := context.WithCancel(context.Background())
	resp, err := h.client.Do(newRequest(t, http.MethodGet, h.url("/stream"), nil).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	_ = resp.Body.Close()
	receive(t, "the engine to see the stream cancelled", gone)
	h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
	if r := h.get("/after"); r.status != http.StatusOK || r.body != "ok" {
		t.Fatalf("after the cancelled stream: %d %q %v", r.status, r.body, r.err)
	}
	if c := conns.Load(); c != 2 {
		t.Errorf("engine connections = %d, want 2: the cancelled stream's is not reused", c)
	}
	if s := h.waitDone(2); s.done[string(proxy.CancelledRunning)] != 1 {
		t.Errorf("outcomes = %v, want one cancelled_running", s.done)
	}
}
