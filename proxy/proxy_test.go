package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// stalledBody is a request body that sends nothing until it is closed or
// ctx ends. A proxy that read it, or let net/http read it, before answering
// would never answer. Ending with ctx lets the client give up when a test
// fails: the client's transport waits for its body reader before it
// returns.
func stalledBody(ctx context.Context) io.ReadCloser {
	return &stalled{ctx: ctx, closed: make(chan struct{})}
}

type stalled struct {
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (s *stalled) Read([]byte) (int, error) {
	select {
	case <-s.ctx.Done():
		return 0, s.ctx.Err()
	case <-s.closed:
		return 0, io.ErrClosedPipe
	}
}

func (s *stalled) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// boundedContext ends when the test ends or after bound.
func boundedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx
}

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// errorJSON is the exact body of an answer slotgate gives itself.
func errorJSON(message, typ string, code int) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"code":%d}}`+"\n", message, typ, code)
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9]+$`)

func TestForwardsRequestAndResponse(t *testing.T) {
	tests := []struct {
		name      string
		requestID string // sent by the client; empty sends none
		wantOwnID bool   // the engine must get the client's id
	}{
		{name: "client request id", requestID: "client-id-42", wantOwnID: true},
		{name: "generated request id"},
		{name: "overlong client id is replaced", requestID: strings.Repeat("x", 129)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("engine read body: %v", err)
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Engine", "yes")
				w.Header().Add("X-Multi", "a")
				w.Header().Add("X-Multi", "b")
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"echo":%q}`, body)
			})
			h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1}})

			req := newRequest(t, http.MethodPost, h.url("/v1/chat/completions?stream=false"), strings.NewReader("hello"))
			if tc.requestID != "" {
				req.Header.Set("X-Request-Id", tc.requestID)
			}
			req.Header.Set("X-Forwarded-For", "1.2.3.4")
			req.Header.Set("Connection", "x-foo")
			req.Header.Set("X-Foo", "bar")
			req.Header.Set("Keep-Alive", "timeout=5")
			req.Header.Set("X-Custom", "kept")
			res := h.do(req)
			if res.err != nil {
				t.Fatal(res.err)
			}

			if res.status != http.StatusCreated || res.body != `{"echo":"hello"}` {
				t.Errorf("answer = %d %q, want 201 %q", res.status, res.body, `{"echo":"hello"}`)
			}
			if got := res.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := res.header.Get("X-Engine"); got != "yes" {
				t.Errorf("X-Engine = %q", got)
			}
			if got := res.header.Values("X-Multi"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
				t.Errorf("X-Multi = %q, want [a b]", got)
			}
			if got := res.header.Get(proxy.ReasonHeader); got != "" {
				t.Errorf("%s = %q on an engine answer", proxy.ReasonHeader, got)
			}

			seen := h.engine.last("/v1/chat/completions")
			if seen == nil {
				t.Fatal("engine never saw the request")
			}
			if seen.URL.RawQuery != "stream=false" || seen.Method != http.MethodPost {
				t.Errorf("engine saw %s ?%s", seen.Method, seen.URL.RawQuery)
			}
			if got := seen.Header.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "1.2.3.4, 127.0.0.1" {
				t.Errorf("engine X-Forwarded-For = %q, want [\"1.2.3.4, 127.0.0.1\"]", got)
			}
			if got := seen.Header.Get("X-Forwarded-Proto"); got != "http" {
				t.Errorf("engine X-Forwarded-Proto = %q", got)
			}
			if got := seen.Header.Get("X-Custom"); got != "kept" {
				t.Errorf("engine X-Custom = %q", got)
			}
			for _, hop := range []string{"X-Foo", "Keep-Alive"} {
				if got, ok := seen.Header[hop]; ok {
					t.Errorf("hop-by-hop header %s = %q reached the engine", hop, got)
				}
			}
			if got := seen.Header.Get("Connection"); strings.Contains(strings.ToLower(got), "x-foo") {
				t.Errorf("engine Connection = %q", got)
			}
			id := seen.Header.Get("X-Request-Id")
			switch {
			case tc.wantOwnID && id != tc.requestID:
				t.Errorf("engine X-Request-Id = %q, want the client's %q", id, tc.requestID)
			case !tc.wantOwnID && !generatedID.MatchString(id):
				t.Errorf("engine X-Request-Id = %q, want a generated id", id)
			}

			s := h.waitOutcome(gate.AdmittedDirect)
			if len(s.queueWaits) != 1 || s.queueWaits[0] != 0 {
				t.Errorf("QueueWait calls = %v, want [0]", s.queueWaits)
			}
			if len(s.firstBytes) != 1 || s.firstBytes[0] <= 0 {
				t.Errorf("FirstByte calls = %v, want one positive", s.firstBytes)
			}
			waitFor(t, "the access log line", func() bool { return h.access.Len() == 1 })
			line := h.accessLines()[0]
			if line["request_id"] != id || line["outcome"] != string(gate.AdmittedDirect) || line["status"] != int64(http.StatusCreated) {
				t.Errorf("access log = %v", line)
			}
			if st := h.lim.Stats(); st.Holding != 0 || st.AdmittedDirect != 1 {
				t.Errorf("limiter stats = %+v", st)
			}
		})
	}
}

func TestGeneratedRequestIDsAreUnique(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]bool{}
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids[r.Header.Get("X-Request-Id")] = true
		mu.Unlock()
	})
	h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1}})
	const n = 20
	for range n {
		if res := h.get("/"); res.err != nil || res.status != http.StatusOK {
			t.Fatalf("answer = %d, %v", res.status, res.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != n {
		t.Errorf("%d distinct ids for %d requests", len(ids), n)
	}
}

func TestOverloadRejectsWithoutReadingBody(t *testing.T) {
	tests := []struct {
		name           string
		overloadStatus int
		retryAfter     time.Duration
		send           string // "stalled" chunked body, "declared" body never sent, or "none"
		wantStatus     int
		wantRetryAfter string
	}{
		{name: "default status", send: "stalled", retryAfter: time.Second, wantStatus: 529, wantRetryAfter: "1"},
		{name: "no retry-after", send: "stalled", wantStatus: 529},
		{name: "configured 503", send: "stalled", overloadStatus: 503, retryAfter: 2500 * time.Millisecond, wantStatus: 503, wantRetryAfter: "2"},
		{name: "configured 429", send: "stalled", overloadStatus: 429, wantStatus: 429},
		{name: "large declared body never sent", send: "declared", retryAfter: time.Second, wantStatus: 529, wantRetryAfter: "1"},
		{name: "small declared body", send: "small", retryAfter: time.Second, wantStatus: 529, wantRetryAfter: "1"},
		{name: "no body", send: "none", retryAfter: time.Second, wantStatus: 529, wantRetryAfter: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newHeldEngine()
			mux := http.NewServeMux()
			mux.Handle("/hold", g)
			mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
				t.Error("engine got the rejected request")
			})
			h := newHarness(t, harnessConfig{
				engine: mux,
				limits: limiter.Options{Slots: 1},
				options: func(o *proxy.Options) {
					o.OverloadStatus = tc.overloadStatus
					o.RetryAfter = tc.retryAfter
				},
			})
			t.Cleanup(g.release)
			held := h.hold(g, "/hold")

			var res result
			switch tc.send {
			case "declared":
				conn, br := h.rawConn()
				_, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\nX-Request-Id: rej-1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer to a request whose body never came: %v", err)
				}
				b, err := io.ReadAll(resp.Body)
				res = result{status: resp.StatusCode, header: resp.Header, body: string(b), close: resp.Close, err: err}
			case "small":
				req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(`{"prompt":"hi"}`))
				req.Header.Set("X-Request-Id", "rej-1")
				res = h.do(req)
			case "stalled":
				ctx := boundedContext(t)
				req := newRequest(t, http.MethodPost, h.url("/v1/completions"), stalledBody(ctx)).WithContext(ctx)
				req.Header.Set("X-Request-Id", "rej-1")
				res = h.do(req)
			default:
				req := newRequest(t, http.MethodGet, h.url("/v1/completions"), nil)
				req.Header.Set("X-Request-Id", "rej-1")
				res = h.do(req)
			}
			if res.err != nil {
				t.Fatalf("no answer to a request whose body never came: %v", res.err)
			}

			if res.status != tc.wantStatus {
				t.Errorf("status = %d, want %d", res.status, tc.wantStatus)
			}
			if want := errorJSON(gate.MessageCapacity, "Overloaded", tc.wantStatus); res.body != want {
				t.Errorf("body = %q, want %q", res.body, want)
			}
			for name, want := range map[string]string{
				"Content-Type":     "application/json",
				proxy.ReasonHeader: "capacity",
				"X-Request-Id":     "rej-1",
				"Retry-After":      tc.wantRetryAfter,
			} {
				if got := res.header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if _, ok := res.header["Retry-After"]; ok && tc.wantRetryAfter == "" {
				t.Error("Retry-After sent though RetryAfter is 0")
			}
			// A body that may never come closes the connection; a small one
			// already sent, or none, leaves it open for the next request.
			if wantClose := tc.send == "stalled" || tc.send == "declared"; res.close != wantClose {
				t.Errorf("connection closed after the answer = %t, want %t", res.close, wantClose)
			}
			if st := h.lim.Stats(); st.RejectedFull != 1 || st.Holding != 1 || st.Waiting != 0 {
				t.Errorf("limiter stats = %+v, want one rejection and the holder", st)
			}

			g.release()
			if r := receive(t, "the holder's answer", held); r.err != nil || r.status != http.StatusOK {
				t.Fatalf("holder answer = %d, %v", r.status, r.err)
			}
			s := h.waitDone(2)
			if s.done[string(gate.RejectedCapacity)] != 1 || s.done[string(gate.AdmittedDirect)] != 1 {
				t.Errorf("outcomes = %v", s.done)
			}
			if len(s.queueWaits) != 1 {
				t.Errorf("QueueWait calls = %v, want only the holder's", s.queueWaits)
			}
			if len(s.firstBytes) != 1 {
				t.Errorf("FirstByte calls = %v, want only the holder's", s.firstBytes)
			}
			if n := h.engine.count("/v1/completions"); n != 0 {
				t.Errorf("engine saw the rejected request %d times", n)
			}
		})
	}
}

func TestQueuedRequestBodyReachesEngine(t *testing.T) {
	full := strings.Repeat("0123456789", 1000) + "end"
	tests := []struct {
		name    string
		chunked bool
	}{
		{name: "content-length body"},
		{name: "chunked body, slot granted mid-upload", chunked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				body          string
				contentLength int64
				te            []string
			}
			got := make(chan seen, 1)
			g := newHeldEngine()
			mux := http.NewServeMux()
			mux.Handle("/hold", g)
			mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("engine read body: %v", err)
				}
				got <- seen{body: string(b), contentLength: r.ContentLength, te: r.TransferEncoding}
				_, _ = w.Write(b)
			})
			h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1, QueueLen: 1}})
			t.Cleanup(g.release)
			held := h.hold(g, "/hold")

			var queued <-chan result
			if tc.chunked {
				pr, pw := io.Pipe()
				t.Cleanup(func() { _ = pw.Close() })
				queued = h.goDo(newRequest(t, http.MethodPost, h.url("/echo"), pr))
				half := len(full) / 2
				if _, err := io.WriteString(pw, full[:half]); err != nil {
					t.Fatal(err)
				}
				h.waitStats("the request to queue", func(s limiter.Stats) bool { return s.Waiting == 1 })
				g.release()
				h.waitStats("the slot to pass to the queued request", func(s limiter.Stats) bool {
					return s.AdmittedQueued == 1 && s.Waiting == 0 && s.Holding == 1
				})
				if _, err := io.WriteString(pw, full[half:]); err != nil {
					t.Fatal(err)
				}
				if err := pw.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				queued = h.goDo(newRequest(t, http.MethodPost, h.url("/echo"), strings.NewReader(full)))
				h.waitStats("the request to queue", func(s limiter.Stats) bool { return s.Waiting == 1 })
				g.release()
			}

			res := receive(t, "the queued answer", queued)
			if res.err != nil || res.status != http.StatusOK || res.body != full {
				t.Fatalf("answer = %d (%d bytes), %v", res.status, len(res.body), res.err)
			}
			e := receive(t, "the engine's request", got)
			if e.body != full {
				t.Errorf("engine got %d bytes, want %d intact", len(e.body), len(full))
			}
			if e.contentLength != int64(len(full)) || len(e.te) != 0 {
				t.Errorf("engine got Content-Length %d, Transfer-Encoding %q; want %d, none", e.contentLength, e.te, len(full))
			}
			if r := receive(t, "the holder's answer", held); r.err != nil || r.status != http.StatusOK {
				t.Fatalf("holder answer = %d, %v", r.status, r.err)
			}

			s := h.waitDone(2)
			if s.done[string(gate.AdmittedQueued)] != 1 || s.done[string(gate.AdmittedDirect)] != 1 {
				t.Errorf("outcomes = %v", s.done)
			}
			positive := 0
			for _, w := range s.queueWaits {
				if w > 0 {
					positive++
				}
			}
			if len(s.queueWaits) != 2 || positive != 1 {
				t.Errorf("QueueWait calls = %v, want a zero and a positive wait", s.queueWaits)
			}
			h.waitStats("every slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
		})
	}
}

func TestClientLeavesQueue(t *testing.T) {
	tests := []struct {
		name    string
		request string
	}{
		{name: "content-length body", request: "POST /queued HTTP/1.1\r\nHost: slotgate\r\nContent-Length: 5\r\n\r\nhello"},
		{name: "chunked body", request: "POST /queued HTTP/1.1\r\nHost: slotgate\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{name: "body cut short", request: "POST /queued HTTP/1.1\r\nHost: slotgate\r\nContent-Length: 10\r\n\r\nhello"},
		{name: "no body", request: "GET /queued HTTP/1.1\r\nHost: slotgate\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newHeldEngine()
			mux := http.NewServeMux()
			mux.Handle("/hold", g)
			mux.HandleFunc("/queued", func(http.ResponseWriter, *http.Request) {
				t.Error("engine got a request whose client left the queue")
			})
			h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1, QueueLen: 1}})
			t.Cleanup(g.release)
			held := h.hold(g, "/hold")

			conn, _ := h.rawConn()
			if _, err := io.WriteString(conn, tc.request); err != nil {
				t.Fatal(err)
			}
			h.waitStats("the request to queue", func(s limiter.Stats) bool { return s.Waiting == 1 })
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			st := h.waitStats("the departed client to leave the queue", func(s limiter.Stats) bool {
				return s.Waiting == 0 && s.CancelledWaiting == 1
			})
			if st.Holding != 1 || st.AdmittedQueued != 0 {
				t.Errorf("limiter stats = %+v", st)
			}
			waitFor(t, "the cancelled request's report", func() bool {
				return h.obs.snapshot().done[string(gate.CancelledQueued)] == 1
			})

			g.release()
			if r := receive(t, "the holder's answer", held); r.err != nil || r.status != http.StatusOK {
				t.Fatalf("holder answer = %d, %v", r.status, r.err)
			}
			s := h.waitDone(2)
			if s.done[string(gate.CancelledQueued)] != 1 || s.done[string(gate.AdmittedDirect)] != 1 {
				t.Errorf("outcomes = %v", s.done)
			}
			if len(s.queueWaits) != 2 {
				t.Errorf("QueueWait calls = %v, want the holder's and the departed one's", s.queueWaits)
			}
			if n := h.engine.count("/queued"); n != 0 {
				t.Errorf("engine saw the departed request %d times", n)
			}
			h.waitStats("every slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
			waitFor(t, "two access log lines", func() bool { return h.access.Len() == 2 })
			for _, line := range h.accessLines() {
				if line["outcome"] == string(gate.CancelledQueued) && line["status"] != int64(proxy.StatusClientClosedRequest) {
					t.Errorf("cancelled request logged with status %v", line["status"])
				}
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	const maxBody = 64
	over := strings.Repeat("x", maxBody+36)
	tooLargeBody := errorJSON("Request body larger than 64 bytes", "invalid_request_error", http.StatusRequestEntityTooLarge)

	newTooLargeHarness := func(t *testing.T, queueLen int) (*harness, *heldEngine) {
		g := newHeldEngine()
		mux := http.NewServeMux()
		mux.Handle("/hold", g)
		mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, "engine answered\n")
		})
		h := newHarness(t, harnessConfig{
			engine:  mux,
			limits:  limiter.Options{Slots: 1, QueueLen: queueLen},
			options: func(o *proxy.Options) { o.MaxRequestBodyBytes = maxBody },
		})
		t.Cleanup(g.release)
		return h, g
	}
	// sendOver sends a chunked body over the limit and keeps the body open
	// until the answer arrives: the 413 must not wait for the rest.
	sendOver := func(t *testing.T, h *harness) result {
		pr, pw := io.Pipe()
		t.Cleanup(func() { _ = pw.Close() })
		answer := h.goDo(newRequest(t, http.MethodPost, h.url("/big"), pr))
		if _, err := io.WriteString(pw, over); err != nil {
			t.Fatal(err)
		}
		return receive(t, "the 413", answer)
	}
	check413 := func(t *testing.T, res result) {
		t.Helper()
		if res.err != nil {
			t.Fatal(res.err)
		}
		if res.status != http.StatusRequestEntityTooLarge || res.body != tooLargeBody {
			t.Errorf("answer = %d %q, want 413 %q", res.status, res.body, tooLargeBody)
		}
		if got := res.header.Get(proxy.ReasonHeader); got != "too_large" {
			t.Errorf("%s = %q, want too_large", proxy.ReasonHeader, got)
		}
		if !res.close {
			t.Error("the connection goes on with the rest of the body unread")
		}
	}

	t.Run("queued chunked body over the limit", func(t *testing.T) {
		h, g := newTooLargeHarness(t, 1)
		held := h.hold(g, "/hold")
		check413(t, sendOver(t, h))
		st := h.waitStats("the queue place to be freed", func(s limiter.Stats) bool { return s.Waiting == 0 })
		if st.CancelledWaiting != 1 || st.AdmittedQueued != 0 || st.Holding != 1 {
			t.Errorf("limiter stats = %+v", st)
		}
		g.release()
		receive(t, "the holder's answer", held)
		s := h.waitDone(2)
		if s.done[string(gate.RejectedTooLarge)] != 1 || s.done[string(gate.AdmittedDirect)] != 1 {
			t.Errorf("outcomes = %v", s.done)
		}
		if len(s.queueWaits) != 2 {
			t.Errorf("QueueWait calls = %v, want the holder's and the queued one's", s.queueWaits)
		}
		if n := h.engine.count("/big"); n != 0 {
			t.Errorf("engine saw the over-long request %d times", n)
		}
		h.waitStats("every slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
	})

	t.Run("direct chunked body over the limit", func(t *testing.T) {
		h, _ := newTooLargeHarness(t, 1)
		check413(t, sendOver(t, h))
		st := h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
		if st.AdmittedDirect != 1 {
			t.Errorf("limiter stats = %+v", st)
		}
		s := h.waitOutcome(gate.RejectedTooLarge)
		if len(s.firstBytes) != 0 {
			t.Errorf("FirstByte calls = %v for a refused request", s.firstBytes)
		}
	})

	t.Run("declared length over the limit", func(t *testing.T) {
		h, _ := newTooLargeHarness(t, 1)
		res := h.do(newRequest(t, http.MethodPost, h.url("/big"), strings.NewReader(over)))
		check413(t, res)
		s := h.waitDone(1)
		if s.done[string(gate.RejectedTooLarge)] != 1 || len(s.queueWaits) != 0 {
			t.Errorf("outcomes = %v, QueueWait calls = %v", s.done, s.queueWaits)
		}
		if st := h.lim.Stats(); st.AdmittedDirect != 0 || st.RejectedFull != 0 || st.Holding != 0 || st.Waiting != 0 {
			t.Errorf("limiter stats = %+v, want no admission", st)
		}
		if n := h.engine.count("/big"); n != 0 {
			t.Errorf("engine saw the over-long request %d times", n)
		}
	})

	t.Run("declared length over the limit, body never sent", func(t *testing.T) {
		h, _ := newTooLargeHarness(t, 1)
		conn, br := h.rawConn()
		if _, err := io.WriteString(conn, "POST /big HTTP/1.1\r\nHost: slotgate\r\nContent-Length: 100\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		check413(t, result{status: resp.StatusCode, header: resp.Header, body: string(b), close: resp.Close, err: err})
	})

	tests := []struct {
		name string
		body io.Reader
	}{
		{name: "declared length at the limit", body: strings.NewReader(over[:maxBody])},
		{name: "chunked body at the limit", body: io.MultiReader(strings.NewReader(over[:maxBody]))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTooLargeHarness(t, 1)
			res := h.do(newRequest(t, http.MethodPost, h.url("/big"), tc.body))
			if res.err != nil || res.status != http.StatusOK {
				t.Fatalf("answer = %d %q, %v; want 200", res.status, res.body, res.err)
			}
			h.waitOutcome(gate.AdmittedDirect)
		})
	}
}

func TestQueueTimeout(t *testing.T) {
	tests := []struct {
		name      string
		body      func(t *testing.T) io.Reader
		wantClose bool
	}{
		{name: "no body", body: func(*testing.T) io.Reader { return nil }},
		{name: "whole body", body: func(*testing.T) io.Reader { return strings.NewReader("whole") }},
		{name: "body still arriving", body: func(t *testing.T) io.Reader { return stalledBody(boundedContext(t)) }, wantClose: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newHeldEngine()
			mux := http.NewServeMux()
			mux.Handle("/hold", g)
			h := newHarness(t, harnessConfig{
				engine: mux,
				// The holder never leaves before the test says so: the
				// queued request's wait ends by the timeout, whatever
				// its length.
				limits:  limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: time.Millisecond},
				options: func(o *proxy.Options) { o.RetryAfter = time.Second },
			})
			t.Cleanup(g.release)
			held := h.hold(g, "/hold")

			res := h.do(newRequest(t, http.MethodPost, h.url("/v1/completions"), tc.body(t)))
			if res.err != nil {
				t.Fatal(res.err)
			}
			if want := errorJSON(gate.MessageQueueTimeout, "Overloaded", 529); res.status != 529 || res.body != want {
				t.Errorf("answer = %d %q, want 529 %q", res.status, res.body, want)
			}
			if got := res.header.Get(proxy.ReasonHeader); got != "queue_timeout" {
				t.Errorf("%s = %q", proxy.ReasonHeader, got)
			}
			if got := res.header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After = %q", got)
			}
			if res.close != tc.wantClose {
				t.Errorf("connection closed after the answer = %t, want %t", res.close, tc.wantClose)
			}
			st := h.waitStats("the timed-out request to leave", func(s limiter.Stats) bool { return s.Waiting == 0 })
			if st.TimedOut != 1 || st.Holding != 1 {
				t.Errorf("limiter stats = %+v", st)
			}
			g.release()
			receive(t, "the holder's answer", held)
			s := h.waitDone(2)
			if s.done[string(gate.RejectedQueueExpired)] != 1 || s.decided[string(gate.RejectedQueueExpired)] != 1 {
				t.Errorf("outcomes = %v, decided %v", s.done, s.decided)
			}
			if len(s.queueWaits) != 2 {
				t.Errorf("QueueWait calls = %v", s.queueWaits)
			}
		})
	}
}

func TestStreamsWithoutBuffering(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
	}{
		{name: "server-sent events", contentType: "text/event-stream"},
		{name: "chunked response without a length", contentType: "application/x-ndjson"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const events = 3
			ack := make(chan struct{})
			engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(http.StatusOK)
				rc := http.NewResponseController(w)
				for i := range events {
					fmt.Fprintf(w, "data: %d\n\n", i)
					if err := rc.Flush(); err != nil {
						t.Errorf("engine flush: %v", err)
						return
					}
					// The next event is written only once the client has
					// read this one through the proxy.
					select {
					case <-ack:
					case <-r.Context().Done():
						return
					}
				}
			})
			h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1}})

			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			req := newRequest(t, http.MethodGet, h.url("/v1/stream"), nil).WithContext(ctx)
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.ContentLength != -1 {
				t.Errorf("ContentLength = %d, want a stream", resp.ContentLength)
			}
			br := bufio.NewReader(resp.Body)
			for i := range events {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if want := fmt.Sprintf("data: %d\n", i); line != want {
					t.Fatalf("event %d = %q, want %q", i, line, want)
				}
				if blank, err := br.ReadString('\n'); err != nil || blank != "\n" {
					t.Fatalf("event %d end = %q, %v", i, blank, err)
				}
				if st := h.lim.Stats(); st.Holding != 1 {
					t.Errorf("event %d: Holding = %d during the stream, want 1", i, st.Holding)
				}
				select {
				case ack <- struct{}{}:
				case <-ctx.Done():
					t.Fatal("engine never asked for the next event")
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the last event: %q, %v", rest, err)
			}
			h.waitStats("the slot to be released after the stream", func(s limiter.Stats) bool { return s.Holding == 0 })
			s := h.waitDone(1)
			if s.done[string(gate.AdmittedDirect)] != 1 || len(s.firstBytes) != 1 {
				t.Errorf("outcomes = %v, FirstByte calls = %v", s.done, s.firstBytes)
			}
		})
	}
}

func TestEngineBreaksMidStream(t *testing.T) {
	tests := []struct {
		name        string
		breakStream func(w http.ResponseWriter)
	}{
		{name: "engine closes its connection", breakStream: func(w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			_ = conn.Close()
		}},
		{name: "engine aborts its handler", breakStream: func(http.ResponseWriter) { panic(http.ErrAbortHandler) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read := make(chan struct{})
			engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "data: first\n\n")
				_ = http.NewResponseController(w).Flush()
				select {
				case <-read:
				case <-r.Context().Done():
					return
				}
				tc.breakStream(w)
			})
			h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1}})

			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			resp, err := h.client.Do(newRequest(t, http.MethodGet, h.url("/v1/stream"), nil).WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if line, err := br.ReadString('\n'); err != nil || line != "data: first\n" {
				t.Fatalf("first event = %q, %v", line, err)
			}
			close(read)
			rest, err := io.ReadAll(br)
			if err == nil {
				t.Errorf("the broken stream ended cleanly after %q; want an error", rest)
			}
			if ctx.Err() != nil {
				t.Fatal("the broken stream was never ended")
			}
			h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
			h.waitOutcome(gate.EngineError)
		})
	}
}

func TestClientDisconnectsMidStream(t *testing.T) {
	tests := []struct {
		name  string
		leave func(cancel context.CancelFunc, body io.Closer)
	}{
		{name: "context cancelled", leave: func(cancel context.CancelFunc, _ io.Closer) { cancel() }},
		{name: "body closed", leave: func(_ context.CancelFunc, body io.Closer) { _ = body.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			engineCancelled := make(chan struct{})
			engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: first\n\n")
				_ = http.NewResponseController(w).Flush()
				<-r.Context().Done()
				close(engineCancelled)
			})
			h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1}})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := h.client.Do(newRequest(t, http.MethodGet, h.url("/v1/stream"), nil).WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: first\n" {
				t.Fatalf("first event = %q, %v", line, err)
			}
			if st := h.lim.Stats(); st.Holding != 1 {
				t.Errorf("Holding = %d during the stream", st.Holding)
			}
			tc.leave(cancel, resp.Body)

			receive(t, "the engine to see its request cancelled", engineCancelled)
			h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
			h.waitOutcome(gate.CancelledRunning)
		})
	}
}

func TestEngineFailures(t *testing.T) {
	tests := []struct {
		name        string
		engine      http.Handler   // nil with raw nil: nobody listens
		raw         func(net.Conn) // when set, serves each engine connection
		transport   bool           // reach the engine through net/http's Transport
		wantStatus  int
		wantBody    string
		wantReason  string
		wantRetry   string
		wantOutcome gate.Outcome
	}{
		{
			name:       "engine unreachable",
			wantStatus: http.StatusServiceUnavailable,
			wantBody:   errorJSON(gate.MessageUnreachable, "Unavailable", http.StatusServiceUnavailable),
			wantReason: "engine_unavailable",
			// No Retry-After: an unreachable engine is not overload, and a
			// client should not be told to come back at a set time.
			wantRetry:   "",
			wantOutcome: gate.RejectedUnavailable,
		},
		{
			// Issue 14: a failure after the request was written is no
			// longer "unreachable": the engine may have begun the
			// generation, and a 503 invites the client to send it again.
			name:        "engine resets after reading the request",
			raw:         readThen(resetConn),
			wantStatus:  http.StatusBadGateway,
			wantBody:    errorJSON("Bad gateway: engine error", "EngineError", http.StatusBadGateway),
			wantReason:  "engine_error",
			wantOutcome: gate.EngineError,
		},
		{
			name:        "engine closes after reading the request",
			raw:         readThen(func(c net.Conn) { _ = c.Close() }),
			wantStatus:  http.StatusBadGateway,
			wantBody:    errorJSON("Bad gateway: engine error", "EngineError", http.StatusBadGateway),
			wantReason:  "engine_error",
			wantOutcome: gate.EngineError,
		},
		{
			name:        "engine resets after reading the request, net/http transport",
			raw:         readThen(resetConn),
			transport:   true,
			wantStatus:  http.StatusBadGateway,
			wantBody:    errorJSON("Bad gateway: engine error", "EngineError", http.StatusBadGateway),
			wantReason:  "engine_error",
			wantOutcome: gate.EngineError,
		},
		{
			name:        "engine unreachable, net/http transport",
			transport:   true,
			wantStatus:  http.StatusServiceUnavailable,
			wantBody:    errorJSON(gate.MessageUnreachable, "Unavailable", http.StatusServiceUnavailable),
			wantReason:  "engine_unavailable",
			wantOutcome: gate.RejectedUnavailable,
		},
		{
			name: "engine error status passes through",
			engine: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Engine-Error", "yes")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, "boom\n")
			}),
			wantStatus:  http.StatusInternalServerError,
			wantBody:    "boom\n",
			wantOutcome: gate.AdmittedDirect,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := harnessConfig{
				engine: tc.engine,
				limits: limiter.Options{Slots: 1},
				options: func(o *proxy.Options) {
					o.RetryAfter = time.Second
					if tc.transport {
						tr := engine.NewTransport(0)
						t.Cleanup(tr.CloseIdleConnections)
						o.Transport = tr
					}
				},
			}
			switch {
			case tc.raw != nil:
				cfg.engineURL = rawEngine(t, tc.raw)
			case tc.engine == nil:
				cfg.engineURL = closedURL(t)
			}
			h := newHarness(t, cfg)
			res := h.do(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(`{"prompt":"x"}`)))
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.status != tc.wantStatus || res.body != tc.wantBody {
				t.Errorf("answer = %d %q, want %d %q", res.status, res.body, tc.wantStatus, tc.wantBody)
			}
			if got := res.header.Get(proxy.ReasonHeader); got != tc.wantReason {
				t.Errorf("%s = %q, want %q", proxy.ReasonHeader, got, tc.wantReason)
			}
			if got := res.header.Get("Retry-After"); got != tc.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tc.wantRetry)
			}
			if tc.engine != nil && res.header.Get("X-Engine-Error") != "yes" {
				t.Error("engine header lost")
			}
			h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
			s := h.waitOutcome(tc.wantOutcome)
			if len(s.queueWaits) != 1 {
				t.Errorf("QueueWait calls = %v, want one for the admitted request", s.queueWaits)
			}
		})
	}
}

func TestDraining(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "healthy\n") })
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served\n") })
	h := newHarness(t, harnessConfig{
		engine: mux,
		limits: limiter.Options{Slots: 1},
		options: func(o *proxy.Options) {
			o.PassthroughPaths = []string{"/health"}
			o.RetryAfter = 2 * time.Second
		},
	})
	if h.proxy.Draining() {
		t.Fatal("Draining() before StartDraining")
	}
	if res := h.get("/v1/completions"); res.status != http.StatusOK || res.close {
		t.Fatalf("before draining: %d %v, connection closed %t", res.status, res.err, res.close)
	}
	// A drain's first step: served as before, but the connection closes.
	h.proxy.CloseConnections()
	if res := h.get("/v1/completions"); res.status != http.StatusOK || !res.close {
		t.Fatalf("closing connections: %d %v, connection closed %t", res.status, res.err, res.close)
	}
	h.proxy.StartDraining()
	if !h.proxy.Draining() {
		t.Fatal("Draining() = false after StartDraining")
	}

	tests := []struct {
		name string
		body func(*testing.T) io.Reader
	}{
		{name: "no body", body: func(*testing.T) io.Reader { return nil }},
		{name: "body never sent", body: func(t *testing.T) io.Reader { return stalledBody(boundedContext(t)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(newRequest(t, http.MethodPost, h.url("/v1/completions"), tc.body(t)))
			if res.err != nil {
				t.Fatal(res.err)
			}
			want := errorJSON(gate.MessageDraining, "Unavailable", http.StatusServiceUnavailable)
			if res.status != http.StatusServiceUnavailable || res.body != want {
				t.Errorf("answer = %d %q, want 503 %q", res.status, res.body, want)
			}
			if got := res.header.Get(proxy.ReasonHeader); got != "draining" {
				t.Errorf("%s = %q", proxy.ReasonHeader, got)
			}
			if got := res.header.Get("Retry-After"); got != "2" {
				t.Errorf("Retry-After = %q", got)
			}
			if !res.close {
				t.Error("connection kept after a draining answer: its client would come back to a pod on its way out")
			}
		})
	}
	if res := h.get("/health"); res.status != http.StatusOK || res.body != "healthy\n" || !res.close {
		t.Errorf("passthrough while draining = %d %q, %v, connection closed %t", res.status, res.body, res.err, res.close)
	}

	waitFor(t, "five access log lines", func() bool { return h.access.Len() == 5 })
	s := h.obs.snapshot()
	if s.total() != 4 || s.done[string(gate.RejectedDraining)] != 2 || s.done[string(gate.AdmittedDirect)] != 2 {
		t.Errorf("outcomes = %v; the passthrough request must not be reported", s.done)
	}
	if n := h.engine.count("/v1/completions"); n != 2 {
		t.Errorf("engine saw %d /v1/completions, want only the two before draining", n)
	}
	if n := h.engine.count("/health"); n != 1 {
		t.Errorf("engine saw %d /health, want 1", n)
	}
	lines := h.accessLines()
	if last := lines[len(lines)-1]; last["path"] != "/health" || last["outcome"] != string(gate.Passthrough) {
		t.Errorf("passthrough access log = %v", last)
	}
	if st := h.lim.Stats(); st.AdmittedDirect != 2 {
		t.Errorf("limiter stats = %+v; draining answers and passthrough take no slot", st)
	}
}

func TestPassthroughTakesNoSlot(t *testing.T) {
	g := newHeldEngine()
	mux := http.NewServeMux()
	mux.Handle("/hold", g)
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "healthy\n") })
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) { t.Error("engine got a rejected request") })
	h := newHarness(t, harnessConfig{
		engine:  mux,
		limits:  limiter.Options{Slots: 1},
		options: func(o *proxy.Options) { o.PassthroughPaths = []string{"/health", "/ready"} },
	})
	t.Cleanup(g.release)
	held := h.hold(g, "/hold")

	for range 3 {
		if res := h.get("/health"); res.err != nil || res.status != http.StatusOK || res.body != "healthy\n" {
			t.Fatalf("passthrough with every slot held = %d %q, %v", res.status, res.body, res.err)
		}
	}
	if res := h.get("/v1/models"); res.status != 529 {
		t.Errorf("non-passthrough with every slot held = %d, want 529", res.status)
	}
	if st := h.lim.Stats(); st.Holding != 1 || st.AdmittedDirect != 1 || st.RejectedFull != 1 {
		t.Errorf("limiter stats = %+v", st)
	}
	g.release()
	receive(t, "the holder's answer", held)
	s := h.waitDone(2)
	if s.done[string(gate.AdmittedDirect)] != 1 || s.done[string(gate.RejectedCapacity)] != 1 {
		t.Errorf("outcomes = %v", s.done)
	}
	waitFor(t, "five access log lines", func() bool { return h.access.Len() == 5 })
}

func TestNewValidates(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Options{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	open, err := gate.New(gate.Options{Limiter: limiter.NewUnlimited()})
	if err != nil {
		t.Fatal(err)
	}
	engine := &url.URL{Scheme: "http", Host: "127.0.0.1:9"}
	tests := []struct {
		name    string
		opts    proxy.Options
		wantErr string // empty: valid
	}{
		{name: "minimal", opts: proxy.Options{Engine: engine, Gate: g}},
		{name: "unlimited limiter", opts: proxy.Options{Engine: engine, Gate: open}},
		{name: "overload 429", opts: proxy.Options{Engine: engine, Gate: g, OverloadStatus: 429}},
		{name: "overload 999", opts: proxy.Options{Engine: engine, Gate: g, OverloadStatus: 999}},
		{name: "missing engine", opts: proxy.Options{Gate: g}, wantErr: "engine"},
		{name: "engine without host", opts: proxy.Options{Engine: &url.URL{Path: "/v1"}, Gate: g}, wantErr: "engine"},
		{name: "missing gate", opts: proxy.Options{Engine: engine}, wantErr: "gate"},
		{name: "overload status 100", opts: proxy.Options{Engine: engine, Gate: g, OverloadStatus: 100}, wantErr: "overload status"},
		{name: "overload status 1000", opts: proxy.Options{Engine: engine, Gate: g, OverloadStatus: 1000}, wantErr: "overload status"},
		{name: "negative retry-after", opts: proxy.Options{Engine: engine, Gate: g, RetryAfter: -time.Second}, wantErr: "negative"},
		{name: "negative body limit", opts: proxy.Options{Engine: engine, Gate: g, MaxRequestBodyBytes: -1}, wantErr: "negative"},
		{name: "negative body timeout", opts: proxy.Options{Engine: engine, Gate: g, RequestBodyTimeout: -time.Second}, wantErr: "negative"},
		{name: "every error at once", opts: proxy.Options{OverloadStatus: 1}, wantErr: "gate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := proxy.New(tc.opts)
			if tc.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("New = %v, %v; want a proxy", p, err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted invalid options")
			}
			if p != nil {
				t.Error("New returned a proxy with an error")
			}
			if !strings.HasPrefix(err.Error(), "proxy: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %q, want proxy: ...%s...", err, tc.wantErr)
			}
		})
	}
}

func TestOutcomesListsEveryReportedOutcome(t *testing.T) {
	want := map[string]bool{}
	for _, o := range []gate.Outcome{
		gate.AdmittedDirect, gate.AdmittedQueued, gate.RejectedCapacity, gate.RejectedQueueTimeout,
		gate.RejectedQueueExpired, gate.RejectedPolicy, gate.RejectedRateLimited, gate.RejectedBusy, gate.RejectedUnavailable, gate.RejectedDraining,
		gate.RejectedTooLarge, gate.RejectedBadRequest, gate.RejectedBodyTimeout, gate.RejectedQueueTokens,
		gate.CancelledQueued,
		gate.CancelledRunning, gate.EngineError,
		gate.FirstTokenTimeout,
	} {
		want[string(o)] = true
	}
	got := gate.Outcomes()
	if len(got) != len(want) {
		t.Errorf("Outcomes() = %q", got)
	}
	for _, o := range got {
		if !want[o] {
			t.Errorf("Outcomes() has %q", o)
		}
		delete(want, o)
	}
	if len(want) != 0 {
		t.Errorf("Outcomes() lacks %v", want)
	}
}

// TestMixedLoadReleasesEverySlot sends 200 concurrent requests of every
// kind, some cancelled by their clients, through N=4, Q=4: afterwards no
// slot is held or waited for, and every request was reported exactly once.
func TestMixedLoadReleasesEverySlot(t *testing.T) {
	const total = 200
	const maxBody = 1024

	type arrival struct {
		once sync.Once
		ch   chan struct{}
	}
	arrivals := make(map[string]*arrival, total)
	for i := range total {
		arrivals[fmt.Sprintf("mixed-%d", i)] = &arrival{ch: make(chan struct{})}
	}
	var arrived atomic.Int64
	allArrived := make(chan struct{})
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a, ok := arrivals[r.Header.Get("X-Request-Id")]; ok {
				a.once.Do(func() {
					close(a.ch)
					if arrived.Add(1) == total {
						close(allArrived)
					}
				})
			} else {
				t.Errorf("request without a known id: %q", r.Header.Get("X-Request-Id"))
			}
			next.ServeHTTP(w, r)
		})
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"ok":true}`) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Holds its slot until every request has arrived, so that the
		// others queue, are refused or are cancelled meanwhile.
		select {
		case <-allArrived:
			_, _ = io.WriteString(w, "slow\n")
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/break", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	h := newHarness(t, harnessConfig{
		engine:  mux,
		limits:  limiter.Options{Slots: 4, QueueLen: 4},
		options: func(o *proxy.Options) { o.MaxRequestBodyBytes = maxBody },
		wrap:    wrap,
	})

	big := strings.Repeat("b", 2*maxBody)
	kinds := []struct {
		name     string
		method   string
		path     string
		body     func() io.Reader
		cancel   bool
		allowed  []int // statuses a finished, uncancelled request may get
		brokenOK bool  // a transport error is expected
	}{
		{name: "fast", method: http.MethodGet, path: "/fast", allowed: []int{200, 529}},
		{name: "echo", method: http.MethodPost, path: "/echo", body: func() io.Reader { return strings.NewReader("hello") }, allowed: []int{200, 529}},
		{name: "echo chunked", method: http.MethodPost, path: "/echo", body: func() io.Reader { return io.MultiReader(strings.NewReader("hello")) }, allowed: []int{200, 529}},
		{name: "slow", method: http.MethodGet, path: "/slow", allowed: []int{200, 529}},
		{name: "slow cancelled", method: http.MethodGet, path: "/slow", cancel: true},
		{name: "slow with body cancelled", method: http.MethodPost, path: "/slow", body: func() io.Reader { return strings.NewReader("body") }, cancel: true},
		{name: "declared too large", method: http.MethodPost, path: "/echo", body: func() io.Reader { return strings.NewReader(big) }, allowed: []int{413}},
		{name: "chunked too large", method: http.MethodPost, path: "/echo", body: func() io.Reader { return io.MultiReader(strings.NewReader(big)) }, allowed: []int{413, 529}},
		{name: "engine breaks", method: http.MethodGet, path: "/break", allowed: []int{529}, brokenOK: true},
	}

	var wg sync.WaitGroup
	for i := range total {
		k := kinds[i%len(kinds)]
		id := fmt.Sprintf("mixed-%d", i)
		var body io.Reader
		if k.body != nil {
			body = k.body()
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, k.method, h.url(k.path), body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Request-Id", id)
		if k.cancel {
			wg.Go(func() {
				select {
				case <-arrivals[id].ch:
					cancel()
				case <-ctx.Done():
				}
			})
		}
		wg.Go(func() {
			defer cancel()
			res := h.do(req)
			switch {
			case k.cancel:
			case res.err != nil:
				if !k.brokenOK || res.status != http.StatusOK {
					t.Errorf("%s %s: %d, %v", id, k.name, res.status, res.err)
				}
			default:
				ok := false
				for _, s := range k.allowed {
					ok = ok || s == res.status
				}
				if !ok {
					t.Errorf("%s %s: status %d, want one of %v", id, k.name, res.status, k.allowed)
				}
			}
		})
	}
	wg.Wait()

	if n := arrived.Load(); n != total {
		t.Fatalf("%d of %d requests reached the proxy", n, total)
	}
	st := h.waitStats("every slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 && s.Waiting == 0 })
	s := h.waitDone(total)
	t.Logf("outcomes %v; limiter %+v", s.done, st)
	if got := uint64(s.done[string(gate.RejectedCapacity)]); got != st.RejectedFull {
		t.Errorf("rejected_capacity = %d, limiter RejectedFull = %d", got, st.RejectedFull)
	}
	if got, want := uint64(s.done[string(gate.AdmittedQueued)]), st.AdmittedQueued; got > want {
		t.Errorf("admitted_queued = %d > limiter AdmittedQueued = %d", got, want)
	}

	waitFor(t, "every access log line", func() bool { return h.access.Len() >= total })
	seen := map[any]int{}
	for _, line := range h.accessLines() {
		seen[line["request_id"]]++
	}
	for id := range arrivals {
		if seen[id] != 1 {
			t.Errorf("%s logged %d times", id, seen[id])
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct ids logged, want %d", len(seen), total)
	}
}

// TestHTTP2RejectionKeepsConnection checks answers over cleartext HTTP/2,
// which cmd/slotgate serves: a rejection of a request whose body never
// comes is answered, and does not shut the shared connection down (an
// HTTP/2 stream is refused on its own; "Connection: close" would make the
// server send GOAWAY to every stream of the connection).
func TestHTTP2RejectionKeepsConnection(t *testing.T) {
	g := newHeldEngine()
	mux := http.NewServeMux()
	mux.Handle("/hold", g)
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) })
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1}, h2c: true})
	t.Cleanup(g.release)
	held := h.hold(g, "/hold")

	ctx := boundedContext(t)
	res := h.do(newRequest(t, http.MethodPost, h.url("/v1/completions"), stalledBody(ctx)).WithContext(ctx))
	if res.err != nil {
		t.Fatalf("no answer to a request whose body never came: %v", res.err)
	}
	if res.status != 529 || res.header.Get(proxy.ReasonHeader) != "capacity" {
		t.Errorf("answer = %d %q", res.status, res.body)
	}
	g.release()
	if r := receive(t, "the holder's answer", held); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("holder answer = %d, %v", r.status, r.err)
	}
	res = h.do(newRequest(t, http.MethodPost, h.url("/echo"), strings.NewReader("after")))
	if res.err != nil || res.status != http.StatusOK || res.body != "after" {
		t.Fatalf("answer after the rejection = %d %q, %v", res.status, res.body, res.err)
	}
	if n := h.conns.Load(); n != 1 {
		t.Errorf("the client opened %d connections, want 1 shared by every stream", n)
	}
	s := h.waitDone(3)
	if s.done[string(gate.RejectedCapacity)] != 1 || s.done[string(gate.AdmittedDirect)] != 2 {
		t.Errorf("outcomes = %v", s.done)
	}
}

// TestQueuedBodyUnreadableIsABadRequest: a queued request whose body
// cannot be read while its client is still there (a malformed chunked
// body) gets a 400 with slotgate's reason, not an empty 200, and never
// reaches the engine.
func TestQueuedBodyUnreadableIsABadRequest(t *testing.T) {
	g := newHeldEngine()
	mux := http.NewServeMux()
	mux.Handle("/hold", g)
	mux.HandleFunc("/v1/completions", func(http.ResponseWriter, *http.Request) {
		t.Error("engine got a request whose body was malformed")
	})
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1, QueueLen: 1}})
	t.Cleanup(g.release)
	held := h.hold(g, "/hold")
	conn, br := h.rawConn()
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\n"+
		"Transfer-Encoding: chunked\r\n\r\nzz\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(proxy.ReasonHeader) != "bad_request" {
		t.Errorf("answer = %d %s %q, want 400 bad_request", resp.StatusCode, resp.Header.Get(proxy.ReasonHeader), b)
	}
	if !resp.Close {
		t.Error("the connection stays open after a body that could not be read")
	}
	g.release()
	if r := receive(t, "the holder's answer", held); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("holder answer = %d, %v", r.status, r.err)
	}
	s := h.waitDone(2)
	if s.done[string(gate.RejectedBadRequest)] != 1 {
		t.Errorf("outcomes = %v, want one rejected_bad_request", s.done)
	}
}

// TestDirectBodyUnreadableIsABadRequest: a directly admitted request whose
// upload breaks while its client is still there is the client's fault: 400
// bad_request, not 502 engine_error, and the slot is released.
func TestDirectBodyUnreadableIsABadRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	})
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1}})
	conn, br := h.rawConn()
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\n"+
		"Transfer-Encoding: chunked\r\n\r\nzz\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(proxy.ReasonHeader) != "bad_request" {
		t.Errorf("answer = %d %s %q, want 400 bad_request", resp.StatusCode, resp.Header.Get(proxy.ReasonHeader), b)
	}
	h.waitOutcome(gate.RejectedBadRequest)
	h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
}

// TestSmallBodyCutShortNeverReachesEngine: a small body with a declared
// length is read whole before the request is forwarded; when its client
// sends only part of it and leaves, the engine never sees the request, the
// outcome is cancelled_running and the slot is released.
func TestSmallBodyCutShortNeverReachesEngine(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		t.Error("engine got a request whose body never arrived whole")
	})
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1}})
	conn, _ := h.rawConn()
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\n"+
		"Content-Length: 100\r\n\r\n{\"prompt\":"); err != nil {
		t.Fatal(err)
	}
	h.waitStats("the request to hold its slot", func(s limiter.Stats) bool { return s.Holding == 1 })
	_ = conn.Close()
	h.waitOutcome(gate.CancelledRunning)
	h.waitStats("the slot to be released", func(s limiter.Stats) bool { return s.Holding == 0 })
}

// TestSmallBodyForwardedWhole: a small body read before forwarding reaches
// the engine byte for byte, with its length.
func TestSmallBodyForwardedWhole(t *testing.T) {
	body := `{"model":"m","prompt":"` + strings.Repeat("word ", 200) + `"}`
	var got atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.ContentLength != int64(len(body)) {
			t.Errorf("engine read %d bytes of a declared %d: %v", len(b), r.ContentLength, err)
		}
		got.Store(string(b))
	})
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1}})
	resp, err := http.Post(h.front.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if g, _ := got.Load().(string); g != body {
		t.Errorf("engine got %d bytes, want the %d sent", len(g), len(body))
	}
	h.waitOutcome(gate.AdmittedDirect)
}

// TestAbortedSlotHandedOnAfterGrace: when a client leaves a running
// request, its slot goes to the next waiter only after the abort grace
// (gate.DefaultAbortGrace, 5 ms), the time the engine takes to see the
// abort; a slot freed by a request that ends normally goes on at once
// (other tests).
func TestAbortedSlotHandedOnAfterGrace(t *testing.T) {
	const grace = 5 * time.Millisecond
	g := newHeldEngine()
	forwardedAt := make(chan time.Time, 1)
	mux := http.NewServeMux()
	mux.Handle("/hold", g)
	mux.HandleFunc("/next", func(http.ResponseWriter, *http.Request) { forwardedAt <- time.Now() })
	h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1, QueueLen: 2}})
	t.Cleanup(g.release)

	conn, _ := h.rawConn()
	if _, err := io.WriteString(conn, "GET /hold HTTP/1.1\r\nHost: slotgate\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	receive(t, "the holder at the engine", g.entered)
	next := h.goDo(newRequest(t, http.MethodGet, h.url("/next"), nil))
	h.waitStats("the next request to queue", func(s limiter.Stats) bool { return s.Waiting == 1 })
	left := time.Now()
	_ = conn.Close()
	at := receive(t, "the queued request at the engine", forwardedAt)
	if d := at.Sub(left); d < grace {
		t.Errorf("the queued request reached the engine %v after the holder's client left, want at least %v", d, grace)
	}
	if r := receive(t, "the queued request's answer", next); r.err != nil || r.status != http.StatusOK {
		t.Errorf("queued request: %d, %v", r.status, r.err)
	}
}
