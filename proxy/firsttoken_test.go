package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// SSE events as an OpenAI-compatible chat engine streams them.
const (
	roleEvent  = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
	tokenEvent = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	doneEvent  = "data: [DONE]\n\n"
	keepAlive  = ": keep-alive\n\n"
)

// step is one write of a scripted engine's answer body, after a pause.
type step struct {
	after time.Duration
	data  string
}

// scriptedEngine is an engine transport for a synctest bubble: it answers
// with its head after a pause, then writes its steps, then ends the body,
// or, when hang is set, keeps it open until the engine request's context
// ends. It records when that context ended while the engine still worked
// on the request: the abort the engine sees.
type scriptedEngine struct {
	head        time.Duration
	contentType string
	steps       []step
	hang        bool

	start     time.Time
	mu        sync.Mutex
	abortedAt time.Duration // since start; -1 while not aborted
}

func (e *scriptedEngine) aborted() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.abortedAt < 0 {
		e.abortedAt = time.Since(e.start)
	}
}

func (e *scriptedEngine) abortTime() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.abortedAt
}

func (e *scriptedEngine) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body) // as an engine reads the request first
		_ = req.Body.Close()
	}
	select {
	case <-time.After(e.head):
	case <-ctx.Done():
		e.aborted()
		return nil, ctx.Err()
	}
	pr, pw := io.Pipe()
	go e.write(ctx, pw)
	h := http.Header{"Content-Type": {e.contentType}}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: pr, ContentLength: -1, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// write writes the steps; it ends with the body, or with ctx.
func (e *scriptedEngine) write(ctx context.Context, pw *io.PipeWriter) {
	for _, s := range e.steps {
		select {
		case <-time.After(s.after):
		case <-ctx.Done():
			e.aborted()
			pw.CloseWithError(ctx.Err())
			return
		}
		if _, err := io.WriteString(pw, s.data); err != nil {
			return // the proxy closed the body
		}
	}
	if e.hang {
		<-ctx.Done()
		e.aborted()
		pw.CloseWithError(ctx.Err())
		return
	}
	_ = pw.Close()
}

// watchResult is what one request through a watched proxy gave.
type watchResult struct {
	status    int
	header    http.Header
	body      string
	outcome   map[string]int
	abortedAt time.Duration // -1: the engine saw no abort
	// held is the slots held as the request ended, and after the abort
	// grace.
	held, heldAfterGrace int
}

// serveWatched sends one request with body (and the TTFT header when
// ttft is set) through a proxy with the watchdog ft in front of eng,
// inside the caller's bubble. uploadStreams sends the body chunked, so
// that the prompt is known only once it reached the engine; uploadTakes
// delays its bytes that long (a slow upload).
func serveWatched(t *testing.T, ft proxy.FirstToken, eng *scriptedEngine, body, ttft string, uploadStreams bool,
	uploadTakes ...time.Duration) watchResult {
	t.Helper()
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	obs := newRecObserver()
	g, err := gate.New(gate.Options{Limiter: lim, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Engine: &url.URL{Scheme: "http", Host: "engine.invalid"}, Gate: g,
		Transport: eng, FirstToken: ft, RetryAfter: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	if uploadStreams {
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), -1
	}
	if len(uploadTakes) > 0 {
		req.Body, req.ContentLength = io.NopCloser(&slowReader{r: strings.NewReader(body), wait: uploadTakes[0]}), -1
	}
	req.Header.Set("Content-Type", "application/json")
	if ttft != "" {
		req.Header.Set(proxy.TTFTHeader, ttft)
	}
	rec := httptest.NewRecorder()
	eng.start, eng.abortedAt = time.Now(), -1
	p.ServeHTTP(rec, req)
	synctest.Wait()
	r := watchResult{status: rec.Code, header: rec.Header(), body: rec.Body.String(),
		outcome: obs.snapshot().done, abortedAt: eng.abortTime(), held: lim.Stats().Holding}
	time.Sleep(2 * gate.DefaultAbortGrace) // in the bubble: the fake clock
	r.heldAfterGrace = lim.Stats().Holding
	return r
}

const (
	streamBody    = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	nonStreamBody = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`
)

// promptOf is a streamed completion request whose prompt is n token ids.
func promptOf(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i % 1000)
	}
	return `{"model":"m","prompt":[` + strings.Join(ids, ",") + `],"stream":true}`
}

// sse is an engine that sends its event-stream head at once, then steps.
func sse(hang bool, steps ...step) *scriptedEngine {
	return &scriptedEngine{contentType: "text/event-stream; charset=utf-8", steps: steps, hang: hang}
}

// tokenAt is an answer whose role chunk comes at once and whose first
// token comes at d, then the end.
func tokenAt(d time.Duration) *scriptedEngine {
	return sse(false, step{0, roleEvent}, step{d, tokenEvent}, step{0, doneEvent})
}

func TestFirstTokenWatchdog(t *testing.T) {
	base := proxy.FirstToken{Timeout: 2 * time.Second}
	cut529 := func(at time.Duration) func(t *testing.T, r watchResult) {
		return func(t *testing.T, r watchResult) { wantOverload(t, r, at) }
	}
	untouched := func(want string) func(t *testing.T, r watchResult) {
		return func(t *testing.T, r watchResult) { wantUntouched(t, r, want) }
	}
	tests := []struct {
		name   string
		ft     proxy.FirstToken
		eng    *scriptedEngine
		body   string
		ttft   string
		upload bool // the body streams to the engine
		check  func(t *testing.T, r watchResult)
	}{
		{name: "no answer head in time", ft: base, body: streamBody,
			eng:   &scriptedEngine{head: time.Minute, contentType: "text/event-stream"},
			check: cut529(2 * time.Second)},
		{name: "event-stream head, then silence", ft: base, body: streamBody,
			eng: sse(true), check: cut529(2 * time.Second)},
		{name: "role-only chunk, then silence", ft: base, body: streamBody,
			eng: sse(true, step{0, roleEvent}), check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, roleEvent, 2*time.Second)
			}},
		{name: "keep-alives and a role chunk are no token", ft: base, body: streamBody,
			eng: sse(true, step{0, keepAlive}, step{time.Second, roleEvent}, step{500 * time.Millisecond, keepAlive}),
			check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, keepAlive+roleEvent+keepAlive, 2*time.Second)
			}},
		{name: "token in time", ft: base, body: streamBody,
			eng: tokenAt(1900 * time.Millisecond), check: untouched(roleEvent + tokenEvent + doneEvent)},
		{name: "token in time, slow rest", ft: base, body: streamBody,
			eng:   sse(false, step{time.Second, tokenEvent}, step{time.Minute, doneEvent}),
			check: untouched(tokenEvent + doneEvent)},
		{name: "x-slo-ttft-ms lowers the budget", ft: proxy.FirstToken{Timeout: 10 * time.Second}, body: streamBody,
			ttft: "1500", eng: tokenAt(3 * time.Second), check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, roleEvent, 1500*time.Millisecond)
			}},
		{name: "x-slo-ttft-ms cannot raise it", ft: base, body: streamBody,
			ttft: "60000", eng: tokenAt(3 * time.Second), check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, roleEvent, 2*time.Second)
			}},
		{name: "malformed x-slo-ttft-ms is ignored", ft: base, body: streamBody,
			ttft: "soon", eng: tokenAt(1900 * time.Millisecond), check: untouched(roleEvent + tokenEvent + doneEvent)},
		{name: "zero x-slo-ttft-ms is ignored", ft: base, body: streamBody,
			ttft: "0", eng: tokenAt(1900 * time.Millisecond), check: untouched(roleEvent + tokenEvent + doneEvent)},
		{name: "per 1k tokens grows it", ft: proxy.FirstToken{Timeout: time.Second, Per1KTokens: time.Second},
			body: promptOf(3000), eng: tokenAt(3900 * time.Millisecond), check: untouched(roleEvent + tokenEvent + doneEvent)},
		{name: "per 1k tokens, still bounded", ft: proxy.FirstToken{Timeout: time.Second, Per1KTokens: time.Second},
			body: promptOf(3000), eng: &scriptedEngine{head: time.Minute, contentType: "text/event-stream"},
			check: cut529(4 * time.Second)},
		{name: "per 1k tokens of a streamed upload", ft: proxy.FirstToken{Timeout: time.Second, Per1KTokens: time.Second},
			body: promptOf(3000), upload: true, eng: tokenAt(3900 * time.Millisecond),
			check: untouched(roleEvent + tokenEvent + doneEvent)},
		{name: "without per 1k tokens the same prompt is cut", ft: proxy.FirstToken{Timeout: time.Second},
			body: promptOf(3000), eng: tokenAt(3900 * time.Millisecond), check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, roleEvent, time.Second)
			}},
		{name: "non-streamed request never cut", ft: base, body: nonStreamBody,
			eng:   &scriptedEngine{head: time.Minute, contentType: "application/json", steps: []step{{0, `{"choices":[]}`}}},
			check: untouched(`{"choices":[]}`)},
		{name: "non-streamed upload never cut", ft: base, body: nonStreamBody, upload: true,
			eng:   &scriptedEngine{head: time.Minute, contentType: "application/json", steps: []step{{0, `{"choices":[]}`}}},
			check: untouched(`{"choices":[]}`)},
		{name: "request without stream, event-stream answer is watched", ft: base,
			body: `{"model":"m","prompt":"hi"}`, eng: sse(true, step{0, roleEvent}), check: func(t *testing.T, r watchResult) {
				wantCutStream(t, r, roleEvent, 2*time.Second)
			}},
		{name: "non-streamed request, event-stream head after the budget", ft: base, body: nonStreamBody,
			eng:   &scriptedEngine{head: 3 * time.Second, contentType: "text/event-stream", hang: true},
			check: cut529(3 * time.Second)},
		{name: "off", body: streamBody, eng: tokenAt(time.Hour), check: untouched(roleEvent + tokenEvent + doneEvent)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.check(t, serveWatched(t, tc.ft, tc.eng, tc.body, tc.ttft, tc.upload))
			})
		})
	}
}

// wantOverload checks the overload answer, the engine's abort at the
// budget, and the outcome.
func wantOverload(t *testing.T, r watchResult, at time.Duration) {
	t.Helper()
	if r.status != 529 || r.header.Get(proxy.ReasonHeader) != "first_token_timeout" || r.header.Get("Retry-After") != "3" {
		t.Errorf("answer %d, reason %q, Retry-After %q; want 529, first_token_timeout, 3",
			r.status, r.header.Get(proxy.ReasonHeader), r.header.Get("Retry-After"))
	}
	var e struct {
		Error struct {
			Message, Type string
			Code          int
		}
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error.Type != "Overloaded" || e.Error.Code != 529 {
		t.Errorf("body %q (%v), want an OpenAI error of type Overloaded, code 529", r.body, err)
	}
	wantAborted(t, r, at)
}

// wantCutStream checks a stream that went out as sent, then ended with
// the error event.
func wantCutStream(t *testing.T, r watchResult, sent string, at time.Duration) {
	t.Helper()
	want := sent + `data: {"error":{"message":"Server overloaded: the engine produced no first token in time","type":"Overloaded","code":529}}` + "\n\n"
	if r.status != http.StatusOK || r.body != want {
		t.Errorf("answer %d %q, want 200 %q", r.status, r.body, want)
	}
	wantAborted(t, r, at)
}

func wantAborted(t *testing.T, r watchResult, at time.Duration) {
	t.Helper()
	if r.abortedAt != at {
		t.Errorf("the engine request was aborted at %v, want %v", r.abortedAt, at)
	}
	if r.outcome[string(gate.FirstTokenTimeout)] != 1 {
		t.Errorf("outcomes %v, want one first_token_timeout", r.outcome)
	}
	// The slot comes back as an aborted stream's does: after the abort
	// grace, for the engine to see the abort.
	if r.held != 1 || r.heldAfterGrace != 0 {
		t.Errorf("slots held at the end %d, after the abort grace %d; want 1, then 0", r.held, r.heldAfterGrace)
	}
}

// wantUntouched checks an answer passed as the engine gave it.
func wantUntouched(t *testing.T, r watchResult, body string) {
	t.Helper()
	if r.status != http.StatusOK || r.body != body {
		t.Errorf("answer %d %q, want 200 %q", r.status, r.body, body)
	}
	if r.abortedAt >= 0 {
		t.Errorf("the engine request was aborted at %v, want never", r.abortedAt)
	}
	if r.outcome[string(gate.AdmittedDirect)] != 1 {
		t.Errorf("outcomes %v, want one admitted_direct", r.outcome)
	}
	if r.held != 0 {
		t.Errorf("slots held at the end %d, want 0", r.held)
	}
}

// TestFirstTokenOptions: a negative budget or growth is refused, naming
// both values.
func TestFirstTokenOptions(t *testing.T) {
	g, err := gate.New(gate.Options{Limiter: limiter.NewUnlimited()})
	if err != nil {
		t.Fatal(err)
	}
	engine := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	for _, ft := range []proxy.FirstToken{{Timeout: -time.Second}, {Timeout: time.Second, Per1KTokens: -time.Millisecond}} {
		_, err := proxy.New(proxy.Options{Engine: engine, Gate: g, FirstToken: ft})
		if err == nil || !strings.Contains(err.Error(), "first-token timeout") || !strings.Contains(err.Error(), ft.Per1KTokens.String()) {
			t.Errorf("New with %+v: %v, want an error naming the first-token timeout and its values", ft, err)
		}
	}
}

// FuzzTTFTHeader: any value of the header is a budget of at least 1ms, or
// ignored; never an error, never a panic.
func FuzzTTFTHeader(f *testing.F) {
	for _, s := range []string{"1500", " 20 ", "0", "-5", "1e3", "soon", "", "9223372036854775807", "9223372036854"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := proxy.ParseTTFT(v)
		if ok && d < time.Millisecond {
			t.Errorf("ParseTTFT(%q) = %v, true: a budget under 1ms", v, d)
		}
		if !ok && d != 0 {
			t.Errorf("ParseTTFT(%q) = %v, false: want 0", v, d)
		}
	})
}

// slowReader gives its bytes only after wait, in the bubble's time.
type slowReader struct {
	r    io.Reader
	wait time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.wait > 0 {
		time.Sleep(s.wait)
		s.wait = 0
	}
	return s.r.Read(p)
}

// TestFirstTokenSlowUpload: the budget runs out while the body is still
// uploading, its prompt and stream flag unknown; once the body has
// arrived, the budget with the prompt known decides: a request still
// within it goes on, and one past it that streams is cut then, even if
// its engine never answers.
func TestFirstTokenSlowUpload(t *testing.T) {
	perK := proxy.FirstToken{Timeout: time.Second, Per1KTokens: time.Second}
	t.Run("within the grown budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// 3000 tokens: 4 s. Uploaded at 1.5 s, head at 2 s, token at 2.5 s.
			eng := &scriptedEngine{head: 500 * time.Millisecond, contentType: "text/event-stream",
				steps: []step{{500 * time.Millisecond, tokenEvent}, {0, doneEvent}}}
			wantUntouched(t, serveWatched(t, perK, eng, promptOf(3000), "", true, 1500*time.Millisecond), tokenEvent+doneEvent)
		})
	})
	t.Run("past the budget, no answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			eng := &scriptedEngine{head: time.Hour, contentType: "text/event-stream"}
			r := serveWatched(t, proxy.FirstToken{Timeout: time.Second}, eng, streamBody, "", true, 1500*time.Millisecond)
			wantOverload(t, r, 1500*time.Millisecond)
		})
	})
}
