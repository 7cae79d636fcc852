package e2e_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// frontEngine is an engine for the front end's tests: a JSON answer of a
// stated length, a stream when the body asks for one, a chunked answer, a
// slow answer whose cancellation it reports, and a connection dropped
// unanswered.
func frontEngine(t *testing.T) (url string, cancelled <-chan struct{}) {
	t.Helper()
	gone := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen-Id", r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Seen-Forwarded-For", r.Header.Get("X-Forwarded-For"))
		switch r.URL.Path {
		case "/v1/completions":
			if strings.Contains(string(body), `"stream":true`) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 3 {
					fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\"}]}\n\n", i)
					w.(http.Flusher).Flush()
				}
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":2,"completion_tokens":4}}`)
		case "/v1/chunked":
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"chunked":true}`)
		case "/v1/slow":
			select {
			case <-r.Context().Done():
				gone <- struct{}{}
			case <-time.After(waitLimit):
			}
		case "/v1/broken":
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = c.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, gone
}

// keptConn opens a connection to slotgate's proxy port and has its first
// request served, which net/http always serves: the requests after it
// are the front end's to take.
func keptConn(t *testing.T, proxyURL string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(proxyURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	return c, bufio.NewReader(c)
}

// TestServedBeforeNetHTTP: on a kept connection, a request after the
// first (served by slotgate's front end, or handed on by it) gets the
// same answer as the same request as a connection's first (served by
// net/http): a JSON answer, a stream, a chunked answer, an engine that
// drops the connection. Each is counted once, in flight and done.
func TestServedBeforeNetHTTP(t *testing.T) {
	url, _ := frontEngine(t)
	sg := start(t, url, nil, "--engine-request-limit", "4", "--request-queue-limit", "4")
	req := func(path, id, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: slotgate\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"+
			"X-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s", path, id, len(body), body)
	}
	for _, tc := range []struct{ name, path, body string }{
		{"json", "/v1/completions", `{"prompt":"hi"}`},
		{"stream", "/v1/completions", `{"prompt":"hi","stream":true}`},
		{"chunked", "/v1/chunked", `{}`},
		{"engine drops the connection", "/v1/broken", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answers [2]string
			for i := range 2 {
				c, br := keptConn(t, sg.proxy)
				if i == 1 {
					writeRaw(t, c, req("/v1/completions", "opener", `{}`))
					if resp, _ := readKept(t, br); resp.StatusCode != http.StatusOK {
						t.Fatalf("the connection's first request: %s", resp.Status)
					}
				}
				writeRaw(t, c, req(tc.path, "the-id", tc.body))
				resp, body := readKept(t, br)
				resp.Header.Del("Date")
				answers[i] = fmt.Sprintf("%s close=%v %v\n%s", resp.Status, resp.Close, resp.Header, body)
			}
			if answers[0] != answers[1] {
				t.Errorf("a connection's first request:\n%s\nthe same after it:\n%s", answers[0], answers[1])
			}
			if !strings.Contains(answers[1], "X-Seen-Id:[the-id]") && !strings.Contains(answers[1], "502") {
				t.Errorf("the engine did not get the request id: %s", answers[1])
			}
		})
	}
	eventually(t, "nothing in flight", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if got := sg.metric("slotgate_requests_total", "outcome", "engine_error"); got != 2 {
		t.Errorf("slotgate_requests_total{outcome=engine_error} = %v, want 2 (the dropped connection, twice)", got)
	}
}

// TestServedBeforeNetHTTPClientLeaves: a client that leaves while the
// engine works on a request the front end serves has that request
// cancelled at the engine and its slot freed, as one net/http serves.
func TestServedBeforeNetHTTPClientLeaves(t *testing.T) {
	url, cancelled := frontEngine(t)
	sg := start(t, url, nil, "--engine-request-limit", "1", "--request-queue-limit", "0")
	c, br := keptConn(t, sg.proxy)
	writeRaw(t, c, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\nContent-Length: 2\r\n\r\n{}")
	if resp, _ := readKept(t, br); resp.StatusCode != http.StatusOK {
		t.Fatalf("the connection's first request: %s", resp.Status)
	}
	writeRaw(t, c, "POST /v1/slow HTTP/1.1\r\nHost: slotgate\r\nContent-Length: 2\r\n\r\n{}")
	eventually(t, "the slow request in flight", func() bool { return sg.metric("dynamo_engine_request") == 1 })
	_ = c.Close()
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the engine's request was not cancelled when its client left")
	}
	eventually(t, "the slot freed", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if got := sg.metric("slotgate_requests_total", "outcome", "cancelled_running"); got != 1 {
		t.Errorf("slotgate_requests_total{outcome=cancelled_running} = %v, want 1", got)
	}
	if resp := post(t.Context(), &http.Client{}, sg.proxy, "after", `{}`); resp.status != http.StatusOK {
		t.Errorf("the next request: %d, want 200 (the slot is free)", resp.status)
	}
}

// TestServedBeforeNetHTTPPipelined: requests a client pipelines on a kept
// connection are served in order, each with its own answer, whether the
// front end or net/http serves them.
func TestServedBeforeNetHTTPPipelined(t *testing.T) {
	url, _ := frontEngine(t)
	sg := start(t, url, nil, "--engine-request-limit", "4", "--request-queue-limit", "4")
	c, br := keptConn(t, sg.proxy)
	const n = 20
	var burst strings.Builder
	for i := range n {
		body := `{"prompt":"hi"}`
		if i%5 == 4 {
			body = `{"prompt":"hi","stream":true}` // handed on: the relay carries it
		}
		fmt.Fprintf(&burst, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\nX-Request-Id: p-%d\r\nContent-Length: %d\r\n\r\n%s",
			i, len(body), body)
	}
	writeRaw(t, c, burst.String())
	for i := range n {
		resp, body := readKept(t, br)
		if want := fmt.Sprintf("p-%d", i); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Seen-Id") != want {
			t.Fatalf("answer %d: %s, the engine saw id %q; want 200 for %s", i, resp.Status, resp.Header.Get("X-Seen-Id"), want)
		}
		if stream := i%5 == 4; stream != strings.Contains(body, "[DONE]") {
			t.Errorf("answer %d: %q", i, body)
		}
	}
	eventually(t, "nothing in flight", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if got := sg.metric("slotgate_requests_total", "outcome", "admitted_direct"); got != n {
		t.Errorf("slotgate_requests_total{outcome=admitted_direct} = %v, want %d", got, n)
	}
}
