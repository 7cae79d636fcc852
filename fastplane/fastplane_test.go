package fastplane_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/fastplane"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

var client = &http.Client{Timeout: waitLimit}

// TestAnswersWhole: a small JSON POST is admitted, sent with its request
// id, and answered whole.
func TestAnswersWhole(t *testing.T) {
	e := newEngine(t)
	p := startPlane(t, e.Server, 4, 4)
	req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/completions", strings.NewReader(`{"prompt":"hi"}`))
	req.Header.Set("X-Request-Id", "abc-1")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"id":"abc-1"}` {
		t.Fatalf("answer %d %q, want 200 with the request id", resp.StatusCode, body)
	}
	p.until(t, "the request reported", func() bool { return p.obs.count(string(gate.AdmittedDirect)) == 1 })
	if s := p.gate.Stats(); s.Holding != 0 {
		t.Errorf("%d slots held after the answer, want 0", s.Holding)
	}
}

// TestStreamsEventByEvent: each SSE event reaches the client before the
// engine writes the next, so none waits in a buffer. (The answer's head
// goes out with its first event: fasthttp flushes at each chunk.)
func TestStreamsEventByEvent(t *testing.T) {
	e := newEngine(t)
	p := startPlane(t, e.Server, 4, 4)
	type result struct {
		resp *http.Response
		err  error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := client.Post(p.url+"/sse", "application/json", strings.NewReader(`{"stream":true}`))
		answered <- result{resp, err}
	}()
	e.events <- "0"
	res := <-answered
	if res.err != nil {
		t.Fatal(res.err)
	}
	defer res.resp.Body.Close()
	r := bufio.NewReader(res.resp.Body)
	for i := range 3 {
		want := fmt.Sprintf("data: %d\n", i)
		line, err := r.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("event %d: read %q, %v; want %q", i, line, err, want)
		}
		if blank, _ := r.ReadString('\n'); blank != "\n" {
			t.Fatalf("event %d not ended by a blank line: %q", i, blank)
		}
		next := fmt.Sprint(i + 1) // written only now that the client read event i
		if i == 2 {
			next = ""
		}
		e.events <- next
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("after the stream: %q, %v; want its clean end", rest, err)
	}
	p.until(t, "the stream's slot released", func() bool {
		return p.gate.Stats().Holding == 0 && p.obs.count(string(gate.AdmittedDirect)) == 1
	})
}

// TestRefusals: refusals carry the net/http path's status, JSON error,
// reason, Retry-After and request id.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setUp      func(*testing.T, *plane, *heldEngine)
		status     int
		typ        string
		reason     string
		retryAfter string
		outcome    gate.Outcome
	}{
		{name: "capacity", setUp: holdTheSlot, status: 529, typ: "Overloaded", reason: "capacity", retryAfter: "1",
			outcome: gate.RejectedCapacity},
		{name: "draining", setUp: func(_ *testing.T, p *plane, _ *heldEngine) { p.gate.StartDraining() },
			status: 503, typ: "Unavailable", reason: "draining", retryAfter: "1", outcome: gate.RejectedDraining},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			p := startPlane(t, e.Server, 1, 0)
			tc.setUp(t, p, e)
			resp, err := client.Post(p.url+"/v1/completions", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error struct {
					Type string `json:"type"`
					Code int    `json:"code"`
				} `json:"error"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || body.Error.Type != tc.typ || body.Error.Code != tc.status {
				t.Errorf("answer %d %+v (%v), want %d %s", resp.StatusCode, body, err, tc.status, tc.typ)
			}
			h := resp.Header
			if h.Get("X-Slotgate-Reason") != tc.reason || h.Get("Retry-After") != tc.retryAfter ||
				h.Get("X-Request-Id") == "" || h.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v, want reason %s, Retry-After %s, a request id, JSON", h, tc.reason, tc.retryAfter)
			}
			p.until(t, "the refusal reported", func() bool { return p.obs.count(string(tc.outcome)) == 1 })
		})
	}
}

// holdTheSlot takes the plane's one slot with a request the engine holds
// until the test ends.
func holdTheSlot(t *testing.T, p *plane, e *heldEngine) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := client.Get(p.url + "/hold"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() {
		e.open()
		<-done
	})
	select {
	case <-e.held:
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for the engine to hold the request")
	}
	if n := p.gate.Stats().Holding; n != 1 {
		t.Fatalf("%d slots held, want 1", n)
	}
}

// TestQueuedClientLeaves: a queued client that hangs up leaves the queue
// at once (its watch sees the socket close), is reported
// cancelled_queued, and never reaches the engine, even once the slot
// frees.
func TestQueuedClientLeaves(t *testing.T) {
	e := newEngine(t)
	p := startPlane(t, e.Server, 1, 1)
	holdTheSlot(t, p, e)
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.url, "http://"), waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":"queued"}`
	if _, err := fmt.Fprintf(c, "POST /v1/queued HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		t.Fatal(err)
	}
	p.until(t, "the request queued", func() bool { return p.gate.Stats().Waiting == 1 })
	c.Close()
	p.until(t, "the queue emptied", func() bool {
		return p.gate.Stats().Waiting == 0 && p.obs.count(string(gate.CancelledQueued)) == 1
	})
	e.open()
	p.until(t, "the held request done", func() bool { return p.gate.Stats().Holding == 0 })
	if n := e.seen("/v1/queued"); n != 0 {
		t.Errorf("the engine got the departed client's request %d times, want 0", n)
	}
}

// TestEngineUnreachable: an engine that refuses connections is answered
// 503 engine_unavailable, and the slot is back.
func TestEngineUnreachable(t *testing.T) {
	e := newEngine(t)
	p := startPlane(t, e.Server, 1, 0)
	e.Close()
	resp, err := client.Post(p.url+"/v1/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Slotgate-Reason") != "engine_unavailable" {
		t.Errorf("answer %d reason %q, want 503 engine_unavailable", resp.StatusCode, resp.Header.Get("X-Slotgate-Reason"))
	}
	p.until(t, "the failure reported", func() bool {
		return p.obs.count(string(gate.RejectedUnavailable)) == 1 && p.gate.Stats().Holding == 0
	})
}

// TestNewRefusesBadOptions: each option's rule, and its error.
func TestNewRefusesBadOptions(t *testing.T) {
	lim, _ := limiter.New(limiter.Options{Slots: 1})
	g, err := gate.New(gate.Options{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	engine, _ := url.Parse("http://127.0.0.1:8000")
	for _, tc := range []struct {
		name string
		opts fastplane.Options
		want string // "" when valid
	}{
		{name: "valid", opts: fastplane.Options{Engine: engine, Gate: g}},
		{name: "no engine", opts: fastplane.Options{Gate: g}, want: "engine"},
		{name: "engine over TLS", opts: fastplane.Options{Engine: &url.URL{Scheme: "https", Host: "e:1"}, Gate: g}, want: "engine"},
		{name: "no gate", opts: fastplane.Options{Engine: engine}, want: "gate"},
		{name: "overload status", opts: fastplane.Options{Engine: engine, Gate: g, OverloadStatus: 99}, want: "overload status"},
		{name: "negative retry", opts: fastplane.Options{Engine: engine, Gate: g, RetryAfter: -time.Second}, want: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fastplane.New(tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New: %v, want an error about %s", err, tc.want)
			}
		})
	}
}
