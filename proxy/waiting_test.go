package proxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// scriptedHeader marks the request a scriptEngine answers step by step.
const scriptedHeader = "X-Test-Scripted"

// scriptEngine answers the request marked with scriptedHeader in steps:
// its headers (at once, or when the test says with holdHeaders), then
// each part when the test says, each flushed. Any other request is
// answered at once and announced on others, with the time it arrived.
// Every wait ends with the request's context, so a client that leaves
// ends the handler.
type scriptEngine struct {
	status      int
	header      map[string]string
	parts       []string
	holdHeaders bool
	entered     chan struct{} // the scripted request reached the engine
	next        chan struct{} // lets the next step go
	sent        chan int      // the step just flushed: -1 the headers, then each part
	others      chan time.Time
}

func newScriptEngine(status int, header map[string]string, parts ...string) *scriptEngine {
	return &scriptEngine{status: status, header: header, parts: parts, entered: make(chan struct{}, 1),
		next: make(chan struct{}), sent: make(chan int, len(parts)+1), others: make(chan time.Time, 16)}
}

func (e *scriptEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = readAll(r)
	if r.Header.Get(scriptedHeader) == "" {
		e.others <- time.Now()
		_, _ = io.WriteString(w, `{}`)
		return
	}
	e.entered <- struct{}{}
	if e.holdHeaders && !e.wait(r) {
		return
	}
	for k, v := range e.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(e.status)
	_ = http.NewResponseController(w).Flush()
	e.sent <- -1
	for i, p := range e.parts {
		if !e.wait(r) {
			return
		}
		_, _ = io.WriteString(w, p)
		_ = http.NewResponseController(w).Flush()
		e.sent <- i
	}
}

// step lets the scripted answer's next step go.
func (e *scriptEngine) step(t *testing.T) {
	t.Helper()
	select {
	case e.next <- struct{}{}:
	case <-time.After(bound):
		t.Fatalf("timed out after %s: the engine took no next step", bound)
	}
}

// wait waits for the test's next step, or the request's end.
func (e *scriptEngine) wait(r *http.Request) bool {
	select {
	case <-e.next:
		return true
	case <-r.Context().Done():
		return false
	}
}

// waitingHarness is a proxy whose limiter has W = 1, no N, and a queue,
// in front of eng.
func waitingHarness(t *testing.T, eng http.Handler) *harness {
	t.Helper()
	return newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{WaitingLimit: 1, QueueLen: 2}})
}

// chatRequest is a chat completion request, the one the scriptEngine
// scripts when scripted, bounded in time.
func chatRequest(t *testing.T, h *harness, scripted bool) *http.Request {
	t.Helper()
	req := newRequest(t, http.MethodPost, h.url("/v1/chat/completions"),
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if scripted {
		req.Header.Set(scriptedHeader, "1")
	}
	return req.WithContext(boundedContext(t))
}

// response is what Client.Do returned.
type response struct {
	resp *http.Response
	err  error
}

// send sends req on a goroutine; its response (headers) arrives on the
// channel.
func (h *harness) send(req *http.Request) <-chan response {
	ch := make(chan response, 1)
	go func() {
		resp, err := h.client.Do(req)
		ch <- response{resp, err}
	}()
	return ch
}

// places are the limiter's holding, prefilling and waiting counts.
type places struct{ holding, prefilling, waiting int }

func placesOf(s limiter.Stats) places { return places{s.Holding, s.Prefilling, s.Waiting} }

const (
	roleChunk    = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
	usageChunk   = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":0}}\n\n"
	contentChunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
	doneChunk    = "data: [DONE]\n\n"
)

// chatJSON is a whole chat completion whose content is n bytes, split
// in the middle of the content.
func chatJSON(n int) (head, tail string) {
	content := strings.Repeat("hello ", n/6+1)[:n]
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5}}`
	cut := strings.Index(body, content) + n/2
	return body[:cut], body[cut:]
}

// TestWaitingPlaceFreedAtFirstToken: with W = 1, a second request waits
// until the first one's first token: the first streamed event that
// carries output, the end of a whole answer, or the headers of an answer
// that cannot be counted; neither headers nor a role-only chunk free it.
func TestWaitingPlaceFreedAtFirstToken(t *testing.T) {
	sse := map[string]string{"Content-Type": "text/event-stream"}
	head, tail := chatJSON(64)
	bigHead, bigTail := chatJSON(200 << 10)
	tests := []struct {
		name   string
		status int
		header map[string]string
		parts  []string
		// frees is the step whose arrival frees the first request's
		// waiting place: -1 the headers, else the part.
		frees int
		// unflushed is how much of a part may stay in the proxy's buffers
		// (an answer with a Content-Length is not flushed as it passes).
		unflushed int
	}{
		{name: "stream: role chunk, then content", status: http.StatusOK, header: sse,
			parts: []string{roleChunk, contentChunk, doneChunk}, frees: 1},
		{name: "stream: comment, usage of no token, then content", status: http.StatusOK, header: sse,
			parts: []string{": ping\n\n", usageChunk, contentChunk, doneChunk}, frees: 2},
		{name: "whole JSON, chunked", status: http.StatusOK, header: map[string]string{"Content-Type": "application/json"},
			parts: []string{head, tail}, frees: 1},
		{name: "whole JSON with a Content-Length", status: http.StatusOK,
			header: map[string]string{"Content-Type": "application/json", "Content-Length": strconv.Itoa(len(bigHead) + len(bigTail))},
			parts:  []string{bigHead, bigTail}, frees: 1, unflushed: 64 << 10},
		{name: "error status", status: http.StatusInternalServerError, header: map[string]string{"Content-Type": "application/json"},
			parts: []string{`{"error":{"message":"boom","type":"x","code":500}}`}, frees: -1},
		{name: "compressed stream", status: http.StatusOK,
			header: map[string]string{"Content-Type": "text/event-stream", "Content-Encoding": "gzip"},
			parts:  []string{"\x1f\x8b not text"}, frees: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := newScriptEngine(tc.status, tc.header, tc.parts...)
			h := waitingHarness(t, eng)
			first := h.send(chatRequest(t, h, true))
			receive(t, "the engine's headers", eng.sent)
			var resp *http.Response
			if tc.unflushed == 0 {
				// The client has the headers, so the proxy has seen them.
				resp = receiveResponse(t, first)
			}
			second := h.goDo(chatRequest(t, h, false))
			if tc.frees == -1 {
				// The first answer's body is still to come.
				receive(t, "the second request at the engine while the first holds its slot", eng.others)
			} else {
				waitFor(t, "the second request to queue", func() bool { return h.lim.Stats().Waiting == 1 || len(eng.others) > 0 })
				if len(eng.others) > 0 {
					t.Fatal("the second request was admitted before the first one's first token")
				}
			}
			var body strings.Builder
			for i, part := range tc.parts {
				eng.step(t)
				receive(t, "the engine's part", eng.sent)
				if resp == nil {
					resp = receiveResponse(t, first)
				}
				// What the client reads has passed the proxy's counter.
				readN(t, resp.Body, &body, max(len(part)-tc.unflushed, 1))
				switch {
				case i < tc.frees:
					if got := placesOf(h.lim.Stats()); got != (places{1, 1, 1}) || len(eng.others) != 0 {
						t.Fatalf("after part %d: %+v, want the second still queued behind W", i, got)
					}
				case i == tc.frees:
					receive(t, "the second request at the engine", eng.others)
				}
			}
			rest, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			body.Write(rest)
			if err != nil || body.String() != strings.Join(tc.parts, "") || resp.StatusCode != tc.status {
				t.Errorf("first answer: %d, %d bytes, %v; want %d and the engine's body", resp.StatusCode, body.Len(), err, tc.status)
			}
			if r := receive(t, "the second answer", second); r.err != nil || r.status != http.StatusOK {
				t.Errorf("second answer: %d, %v", r.status, r.err)
			}
			h.waitStats("every place free", func(s limiter.Stats) bool { return placesOf(s) == places{} })
		})
	}
}

// TestClientLeavesBeforeFirstToken: a client that leaves before its first
// token frees its slot and its waiting place, but only after the abort
// grace (the engine still counts the request until it sees the abort), so
// the request queued behind W goes on no sooner; the one that left is
// cancelled_running.
func TestClientLeavesBeforeFirstToken(t *testing.T) {
	const grace = 5 * time.Millisecond
	tests := []struct {
		name        string
		holdHeaders bool // it leaves before the engine's headers
	}{
		{name: "before the headers", holdHeaders: true},
		{name: "after the headers and a role chunk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := newScriptEngine(http.StatusOK, map[string]string{"Content-Type": "text/event-stream"}, roleChunk, contentChunk)
			eng.holdHeaders = tc.holdHeaders
			h := waitingHarness(t, eng)
			ctx, leave := context.WithCancel(boundedContext(t))
			defer leave()
			first := h.send(chatRequest(t, h, true).WithContext(ctx))
			receive(t, "the first request at the engine", eng.entered)
			if !tc.holdHeaders {
				receive(t, "the engine's headers", eng.sent)
				resp := receiveResponse(t, first)
				defer resp.Body.Close()
				eng.step(t)
				receive(t, "the role chunk", eng.sent)
				var body strings.Builder
				readN(t, resp.Body, &body, len(roleChunk))
			}
			second := h.goDo(chatRequest(t, h, false))
			h.waitStats("the second request to queue", func(s limiter.Stats) bool { return s.Waiting == 1 })
			if len(eng.others) != 0 {
				t.Fatal("the second request reached the engine while W was full")
			}

			left := time.Now()
			leave()
			at := receive(t, "the second request at the engine", eng.others)
			if r := receive(t, "the second answer", second); r.err != nil || r.status != http.StatusOK {
				t.Errorf("second answer: %d, %v", r.status, r.err)
			}
			if tc.holdHeaders {
				if r := receive(t, "the first request to end", first); !errors.Is(r.err, context.Canceled) {
					t.Errorf("first request: %v, want it cancelled", r.err)
				}
			}
			h.waitStats("every place free", func(s limiter.Stats) bool { return placesOf(s) == places{} })
			s := h.waitDone(2)
			if s.done[string(gate.CancelledRunning)] != 1 || s.done[string(gate.AdmittedQueued)] != 1 {
				t.Errorf("outcomes %v, want one cancelled_running and one admitted_queued", s.done)
			}
			// A lower bound only: the grace may last longer, never less.
			if d := at.Sub(left); d < grace {
				t.Errorf("the queued request reached the engine %v after the client left, want at least %v", d, grace)
			}
		})
	}
}

// TestChosenRankIsForwarded: with limits per rank, a request that names
// no rank is sent to the rank the gate chose, in RankHeader; one that
// names a rank keeps it; one naming a rank the engine lacks is refused.
func TestChosenRankIsForwarded(t *testing.T) {
	tests := []struct {
		name       string
		header     string // RankHeader sent; "" none
		rank0Busy  bool   // a request pinned to rank 0 holds its slot
		wantStatus int
		wantRank   string // as the engine sees it
		wantBody   string
	}{
		{name: "unpinned, ranks free", wantStatus: http.StatusOK, wantRank: "0"},
		{name: "unpinned, rank 0 busy", rank0Busy: true, wantStatus: http.StatusOK, wantRank: "1"},
		{name: "pinned", header: "1", wantStatus: http.StatusOK, wantRank: "1"},
		{name: "not a rank", header: "first", rank0Busy: true, wantStatus: http.StatusOK, wantRank: "1"},
		{name: "pinned out of range", header: "7", wantStatus: http.StatusBadRequest,
			wantBody: errorJSON("data-parallel rank 7 is not a rank of this engine (0 through 1)", "invalid_request_error", 400)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			held := newHeldEngine()
			mux := http.NewServeMux()
			mux.Handle("/hold", held)
			mux.Handle("/", okEngine(t))
			// The harness's own limiter is replaced by the ranks'.
			h := newHarness(t, harnessConfig{engine: mux, limits: limiter.Options{Slots: 1}, gate: func(o *gate.Options) {
				lims, err := gate.RankLimiters(2, func() (*limiter.Limiter, error) {
					return limiter.New(limiter.Options{Slots: 1, QueueLen: 1})
				})
				if err != nil {
					t.Fatal(err)
				}
				o.Limiter, o.Limiters = nil, lims
			}})
			t.Cleanup(held.release)
			if tc.rank0Busy {
				req := newRequest(t, http.MethodGet, h.url("/hold"), nil)
				req.Header.Set(proxy.RankHeader, "0")
				h.goDo(req)
				receive(t, "the holder at the engine", held.entered)
			}
			req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(`{"prompt":"x"}`))
			if tc.header != "" {
				req.Header.Set(proxy.RankHeader, tc.header)
			}
			r := h.do(req)
			if r.err != nil || r.status != tc.wantStatus || tc.wantBody != "" && r.body != tc.wantBody {
				t.Fatalf("answer %d %q, %v; want %d %q", r.status, r.body, r.err, tc.wantStatus, tc.wantBody)
			}
			seen := h.engine.last("/v1/completions")
			switch {
			case tc.wantRank == "" && seen != nil:
				t.Error("a refused request reached the engine")
			case tc.wantRank != "" && (seen == nil || seen.Header.Get(proxy.RankHeader) != tc.wantRank):
				t.Errorf("engine saw %v, want %s %s", seen, proxy.RankHeader, tc.wantRank)
			}
		})
	}
}

// receiveResponse waits for a response's headers.
func receiveResponse(t *testing.T, ch <-chan response) *http.Response {
	t.Helper()
	r := receive(t, "the response headers", ch)
	if r.err != nil {
		t.Fatalf("request failed: %v", r.err)
	}
	return r.resp
}

// readN reads n bytes of body into to.
func readN(t *testing.T, body io.Reader, to *strings.Builder, n int) {
	t.Helper()
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		t.Fatalf("reading %d bytes of the answer: %v", n, err)
	}
	to.Write(buf)
}
