package e2e_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingEngine answers completions with what it received, records
// each request as it arrived, by X-Request-Id, and holds the one named
// "holder" until released.
type recordingEngine struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     map[string]string // id: method, target, X-Custom values, body
	holding chan struct{}     // closed when the holder arrived
	release chan struct{}
}

func newRecordingEngine(t *testing.T) *recordingEngine {
	e := &recordingEngine{got: make(map[string]string), holding: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		id := r.Header.Get("X-Request-Id")
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got[id] = fmt.Sprintf("%s %s %q %s", r.Method, r.RequestURI, r.Header.Values("X-Custom"), body)
		e.mu.Unlock()
		if id == "holder" {
			once.Do(func() { close(e.holding) })
			<-e.release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"choices":[{"text":"ok"}]}`, id)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *recordingEngine) request(id string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.got[id]
	return s, ok
}

// parkedRequest is a completion as a client sends it, with a query, a
// header of two values and a body, all of which must reach the engine as
// sent.
// needRelay skips a test of parking when the suite runs with the relay
// off (SLOTGATE_E2E_STREAM_RELAY=off): requests are parked on the relay's
// loops, so without it they wait on their goroutine, as the README says.
func needRelay(t *testing.T) {
	t.Helper()
	if os.Getenv("SLOTGATE_E2E_STREAM_RELAY") == "off" {
		t.Skip("parking needs the stream relay, and SLOTGATE_E2E_STREAM_RELAY=off turns it off")
	}
}

// parkedTarget is a parked request's target whose percent-encoded
// query keeps it off the front end, which leaves it to net/http, whose
// handler parks it. frontEndTarget is one the front end parks itself.
const (
	parkedTarget   = "/v1/completions?x=1&y=%20z"
	frontEndTarget = "/v1/completions?x=1&y=z"
)

func parkedRequestTo(target, id string) string {
	body := parkedBody(id)
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\nX-Custom: a\r\nX-Custom: b\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", target, id, len(body), body)
}

// parkedBody is the body of the parked request id: p7's carries a long
// user field (40 KiB), more than slotgate holds whole before forwarding a
// request admitted at once, which it streams to the engine once its turn
// comes.
func parkedBody(id string) string {
	if strings.HasPrefix(id, "p7") {
		return fmt.Sprintf(`{"prompt":"parked %s","user":"%s"}`, id, strings.Repeat("u", 40<<10))
	}
	return fmt.Sprintf(`{"prompt":"parked %s"}`, id)
}

// TestParkedRequests: requests that wait in the queue leave net/http while
// they wait (no goroutine, not net/http's two and their buffers), and
// come back whole: each reaches the engine as its client sent it, is
// answered on its connection, and the connection serves the client's
// next request, a pipelined one included: parked by net/http's handler,
// or by the front end before net/http reads them (a plain request). So
// with an admission policy, whose classifier decides each at once.
func TestParkedRequests(t *testing.T) {
	needRelay(t)
	for _, tc := range []struct {
		name       string
		withPolicy bool
		target     string
	}{
		{"net/http's", false, parkedTarget},
		{"the front end's", false, frontEndTarget},
		{"policy", true, parkedTarget},
	} {
		t.Run(tc.name, func(t *testing.T) { testParkedRequests(t, tc.withPolicy, tc.target) })
	}
}

func testParkedRequests(t *testing.T, withPolicy bool, target string) {
	parkedRequest := func(id string) string { return parkedRequestTo(target, id) }
	eng := newRecordingEngine(t)
	args := []string{"--engine-request-limit", "1", "--request-queue-limit", "64", "--enable-profiling"}
	if withPolicy {
		path := filepath.Join(t.TempDir(), "admission.yaml")
		if err := os.WriteFile(path, []byte(policyYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--admission-config", path)
	}
	sg := start(t, eng.srv.URL, nil, args...)
	holder := make(chan result, 1)
	go func() { holder <- post(t.Context(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	<-eng.holding

	const parked = 40
	conns := make([]net.Conn, parked)
	readers := make([]*bufio.Reader, parked)
	for i := range conns {
		c, err := net.Dial("tcp", strings.TrimPrefix(sg.proxy, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i], readers[i] = c, bufio.NewReader(c)
		req := parkedRequest(fmt.Sprintf("p%d", i))
		if i == 0 {
			req += parkedRequest("p0-pipelined") // sent with the first
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all queued", func() bool { return sg.metric("dynamo_request_queue") == parked })
	// A request waiting on its goroutine holds a handler in the limiter's
	// wait (and net/http's background read beside it); a parked one holds
	// no goroutine (the relay's loop watches its client).
	if n := waitingHandlers(t, sg); n != 0 {
		t.Errorf("%d of %d queued requests wait on a goroutine: they are not parked", n, parked)
	}

	close(eng.release)
	if h := <-holder; h.status != http.StatusOK {
		t.Fatalf("holder: %d %v", h.status, h.err)
	}
	expectAnswer := func(i int, id string) {
		t.Helper()
		_ = conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(readers[i], nil)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), fmt.Sprintf("%q", id)) {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
	}
	for i := range conns {
		expectAnswer(i, fmt.Sprintf("p%d", i))
	}
	expectAnswer(0, "p0-pipelined")
	for i := range conns {
		id := fmt.Sprintf("p%d-again", i)
		if _, err := io.WriteString(conns[i], parkedRequest(id)); err != nil {
			t.Fatal(err)
		}
		expectAnswer(i, id)
	}
	for _, id := range []string{"p0", "p7", "p39", "p0-pipelined", "p3-again", "p7-again"} {
		got, ok := eng.request(id)
		want := fmt.Sprintf(`POST %s ["a" "b"] %s`, target, parkedBody(id))
		if !ok || got != want {
			t.Errorf("the engine got %s as\n%s\nwant\n%s", id, got, want)
		}
	}
	if n := sg.metric("slotgate_requests_total", "outcome", "admitted_queued"); n < parked {
		t.Errorf("admitted_queued = %v, want at least %d", n, parked)
	}
	if n := sg.metric("dynamo_engine_request"); n != 0 {
		t.Errorf("dynamo_engine_request = %v after every answer, want 0", n)
	}
}

// TestParkedRequestTimesOut: a parked request whose queue delay passes is
// answered with the overload error on its connection, which then serves
// the client's next request: parked by net/http's handler or by the
// front end.
func TestParkedRequestTimesOut(t *testing.T) {
	for _, target := range []string{parkedTarget, frontEndTarget} {
		t.Run(target, func(t *testing.T) { testParkedRequestTimesOut(t, target) })
	}
}

func testParkedRequestTimesOut(t *testing.T, target string) {
	parkedRequest := func(id string) string { return parkedRequestTo(target, id) }
	eng := newRecordingEngine(t)
	sg := start(t, eng.srv.URL, nil, "--engine-request-limit", "1", "--request-queue-limit", "4", "--queue-timeout", "200ms")
	holder := make(chan result, 1)
	go func() { holder <- post(t.Context(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	<-eng.holding
	c, err := net.Dial("tcp", strings.TrimPrefix(sg.proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, parkedRequest("late")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 529 || decodeError(t, string(b)).Error.Message == "" {
		t.Fatalf("timed out: %d %s; want 529 with an error", resp.StatusCode, b)
	}
	if _, ok := eng.request("late"); ok {
		t.Error("a request that timed out in the queue reached the engine")
	}
	close(eng.release)
	<-holder
	if _, err := io.WriteString(c, parkedRequest("next")); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("next request on the connection: %v, %v", resp, err)
	}
	resp.Body.Close()
	for _, o := range []string{"rejected_queue_expired", "admitted_direct"} {
		if n := sg.metric("slotgate_requests_total", "outcome", o); n < 1 {
			t.Errorf("%s = %v, want 1", o, n)
		}
	}
}

// TestParkedBodiesHoldTheBudget: a parked request's body stays in memory,
// so it keeps its share of --max-buffered-body-bytes while it waits: a
// second body that does not fit beside it waits unread, on its goroutine,
// and both are served once the engine frees up.
func TestParkedBodiesHoldTheBudget(t *testing.T) {
	needRelay(t)
	eng := newRecordingEngine(t)
	sg := start(t, eng.srv.URL, nil, "--engine-request-limit", "1", "--request-queue-limit", "4",
		"--max-buffered-body-bytes", "1000", "--enable-profiling")
	holder := make(chan result, 1)
	go func() { holder <- post(t.Context(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	<-eng.holding
	send := func(id string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", strings.TrimPrefix(sg.proxy, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := fmt.Sprintf(`{"prompt":%q}`, strings.Repeat("x", 600))
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
		return c, bufio.NewReader(c)
	}
	a, ra := send("a")
	eventually(t, "a queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })
	if n := waitingHandlers(t, sg); n != 0 {
		t.Errorf("with a queued, %d requests wait on a goroutine; want a parked", n)
	}
	b, rb := send("b")
	eventually(t, "b queued", func() bool { return sg.metric("dynamo_request_queue") == 2 })
	// b's body did not fit beside a's: b waits on its goroutine, its body
	// unread.
	if n := waitingHandlers(t, sg); n != 1 {
		t.Errorf("with a and b queued, %d requests wait on a goroutine; want 1, b (its body over the budget)", n)
	}
	close(eng.release)
	<-holder
	for _, tc := range []struct {
		c  net.Conn
		r  *bufio.Reader
		id string
	}{{a, ra, "a"}, {b, rb, "b"}} {
		_ = tc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(tc.r, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", tc.id, resp.StatusCode)
		}
	}
}

// waitingHandlers counts the goroutines waiting in the limiter for a
// slot, in the sidecar's goroutine profile (--enable-profiling): one per
// request that waits on its goroutine, none for a parked one.
func waitingHandlers(t *testing.T, sg *sidecar) int {
	t.Helper()
	code, body := get(t, sg.admin+"/debug/pprof/goroutine?debug=2")
	if code != http.StatusOK {
		t.Fatalf("goroutine profile: %d %s", code, body)
	}
	return strings.Count(body, "limiter.(*Limiter).wait(")
}
