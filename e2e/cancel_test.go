package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawRequest opens a connection and sends an HTTP/1.1 completion with its
// whole body, as a client that can then vanish by closing the connection.
func rawRequest(t *testing.T, proxyURL, id string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(proxyURL, "http://"))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	body := `{"prompt":"queued"}`
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
	return conn
}

// TestCancelWhileQueued: a client that leaves while queued frees its queue
// place at once, and its request never reaches the engine.
func TestCancelWhileQueued(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--request-queue-limit", "2")
	holder := make(chan result, 1)
	go func() { holder <- post(context.Background(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	eng.waitInFlight(t, 1)

	conn := rawRequest(t, sg.proxy, "leaver")
	eventually(t, "the leaver queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })
	conn.Close()
	eventually(t, "the queue to empty", func() bool { return sg.metric("dynamo_request_queue") == 0 })
	if got := sg.metric("slotgate_requests_total", "outcome", "cancelled_queued"); got != 1 {
		t.Errorf("cancelled_queued = %v, want 1", got)
	}

	eng.release()
	if h := <-holder; h.status != http.StatusOK {
		t.Fatalf("holder: status %d", h.status)
	}
	// A later request is served, and only it and the holder reached the engine.
	if r := post(context.Background(), http.DefaultClient, sg.proxy, "after", "{}"); r.status != http.StatusOK {
		t.Errorf("after: status %d", r.status)
	}
	_, _, seen, _ := eng.stats()
	if slices.Contains(seen, "leaver") {
		t.Errorf("the engine received a request whose client had left: %v", seen)
	}
	if got := sg.metric("dynamo_engine_request"); got != 0 {
		t.Errorf("dynamo_engine_request = %v after all finished, want 0", got)
	}
}

// TestCancelWhileRunning: a client that leaves mid-request cancels the
// engine's request (so the engine frees its KV cache) and frees the slot.
func TestCancelWhileRunning(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1")
	conn := rawRequest(t, sg.proxy, "runner")
	eng.waitInFlight(t, 1)
	conn.Close()
	eventually(t, "the engine to see the cancellation", func() bool {
		_, _, _, cancelled := eng.stats()
		return slices.Contains(cancelled, "runner")
	})
	eventually(t, "the slot to be freed", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	eventually(t, "the outcome to be counted", func() bool {
		return sg.metric("slotgate_requests_total", "outcome", "cancelled_running") == 1
	})
	eng.release()
	if r := post(context.Background(), http.DefaultClient, sg.proxy, "next", "{}"); r.status != http.StatusOK {
		t.Errorf("next request: status %d", r.status)
	}
}

// TestEngineDown: an unreachable engine gives 503 with its own message; it
// is not a capacity rejection, and readiness fails.
func TestEngineDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	sg := start(t, deadURL, nil, "--engine-request-limit", "2")
	r := post(context.Background(), http.DefaultClient, sg.proxy, "lost", "{}")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 (body %s)", r.status, r.body)
	}
	e := decodeError(t, r.body)
	if e.Error.Message != "Server unavailable: engine unreachable" || e.Error.Type != "Unavailable" || e.Error.Code != 503 {
		t.Errorf("error body %+v", e.Error)
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != 0 {
		t.Errorf("an unreachable engine counted as a capacity rejection: %v", got)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_unavailable"); got != 1 {
		t.Errorf("rejected_unavailable = %v, want 1", got)
	}
	if got := sg.metric("dynamo_engine_request"); got != 0 {
		t.Errorf("slot not released after an engine failure: %v", got)
	}
	eventually(t, "readiness to report the engine", func() bool {
		status, body := get(t, sg.admin+"/readyz")
		return status == http.StatusServiceUnavailable && strings.Contains(body, "engine")
	})
	if status, _ := get(t, sg.admin+"/livez"); status != http.StatusOK {
		t.Errorf("/livez = %d with the engine down, want 200", status)
	}
}

// TestStreamingIsNotBuffered: each Server-Sent Event reaches the client
// before the engine writes the next one, and the slot is held until the
// stream ends.
func TestStreamingIsNotBuffered(t *testing.T) {
	const chunks = 5
	next := make(chan struct{})
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/v1/completions":
		default: // slotgate's load scrapes must not take the test's events
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range chunks {
			fmt.Fprintf(w, "data: {\"chunk\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(eng.Close)
	sg := start(t, eng.URL, nil, "--engine-request-limit", "1")
	resp, err := http.Post(sg.proxy+"/v1/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i := range chunks {
		line := readEvent(t, rd)
		if want := fmt.Sprintf(`data: {"chunk":%d}`, i); line != want {
			t.Fatalf("event %d = %q, want %q", i, line, want)
		}
		if got := sg.metric("dynamo_engine_request"); got != 1 {
			t.Errorf("slot not held mid-stream: dynamo_engine_request = %v", got)
		}
		next <- struct{}{} // only now may the engine write the next event
	}
	if line := readEvent(t, rd); line != "data: [DONE]" {
		t.Errorf("last event %q", line)
	}
	eventually(t, "the slot to be released", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if got := sg.metric("slotgate_time_to_first_byte_seconds"); got != 1 {
		t.Errorf("time-to-first-byte samples = %v, want 1", got)
	}
}

// readEvent reads one SSE event line, skipping blank separators, with a
// bound so that a buffering proxy fails the test rather than hang it.
func readEvent(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		for {
			s, err := rd.ReadString('\n')
			if err != nil || strings.TrimSpace(s) != "" {
				ch <- line{strings.TrimSpace(s), err}
				return
			}
		}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			t.Fatalf("read event: %v", l.err)
		}
		return l.s
	case <-time.After(waitLimit):
		t.Fatalf("no event within %s: the proxy buffers the stream", waitLimit)
		return ""
	}
}
