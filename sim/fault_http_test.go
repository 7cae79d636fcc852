package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testPause is the stall and slow first token of the fault tests over the
// network: long next to a test answer's 70 ms, short for a test.
const testPause = 250 * time.Millisecond

// certain returns the fault set in which every request draws k.
func certain(k Fault) FaultSet {
	s := FaultSet{Stall: testPause, SlowFirstToken: testPause}
	switch k {
	case FaultReset:
		s.ResetRate = 1
	case FaultError:
		s.ErrorRate = 1
	case FaultStall:
		s.StallRate = 1
	case FaultSlowFirstToken:
		s.SlowFirstTokenRate = 1
	case FaultNeverEnd:
		s.NeverEndRate = 1
	}
	return s
}

// answer is what a client saw of one request.
type answer struct {
	doErr    error
	status   int
	proto    int             // the HTTP major version
	body     string          // a non-streamed answer
	events   []string        // SSE data payloads, [DONE] excluded
	times    []time.Duration // since the request, of each event and of [DONE]
	done     bool            // [DONE] came
	comments int             // SSE comments
	readErr  error           // what ended the body, nil for a clean end
	elapsed  time.Duration   // until the body ended
}

// ask sends a completion (chat or not) with a timeout and reads the whole
// answer, timing each event.
func ask(t *testing.T, s *testServer, chat, stream bool, maxTokens int, timeout time.Duration) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	path, body := "/v1/completions", fmt.Sprintf(`{"prompt":"hello","max_tokens":%d,"ignore_eos":true,"stream":%t}`, maxTokens, stream)
	if chat {
		path = "/v1/chat/completions"
		body = fmt.Sprintf(`{"messages":[{"role":"user","content":"hello"}],"max_tokens":%d,"ignore_eos":true,"stream":%t}`, maxTokens, stream)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{doErr: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, proto: resp.ProtoMajor}
	if !stream || resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(resp.Body)
		a.body, a.readErr, a.elapsed = string(b), err, time.Since(start)
		return a
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) || line != "" {
				a.readErr = err
			}
			break
		}
		switch line = strings.TrimSuffix(line, "\n"); {
		case line == "data: [DONE]":
			a.done = true
			a.times = append(a.times, time.Since(start))
		case strings.HasPrefix(line, "data: "):
			a.events = append(a.events, strings.TrimPrefix(line, "data: "))
			a.times = append(a.times, time.Since(start))
		case strings.HasPrefix(line, ":"):
			a.comments++
		}
	}
	a.elapsed = time.Since(start)
	return a
}

// tokens counts the events that carry an output token and reports whether
// any carries a finish reason.
func (a answer) tokens(t *testing.T) (n int, finished bool) {
	t.Helper()
	for _, e := range a.events {
		var c struct {
			Choices []struct {
				Text         *string                   `json:"text"`
				Delta        struct{ Content *string } `json:"delta"`
				FinishReason *string                   `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		for _, ch := range c.Choices {
			if (ch.Text != nil && *ch.Text != "") || (ch.Delta.Content != nil && *ch.Delta.Content != "") {
				n++
			}
			finished = finished || ch.FinishReason != nil
		}
	}
	return n, finished
}

// longestGap is, of the arrival times of an answer's messages or events
// (since the call), the longest wait between two, the number that came
// before it, and when the one after it came (0 with no gap).
func longestGap(times []time.Duration) (gap time.Duration, before int, next time.Duration) {
	for i := 1; i < len(times); i++ {
		if d := times[i] - times[i-1]; d > gap {
			gap, before, next = d, i, times[i]
		}
	}
	return gap, before, next
}

// faultServer serves a running engine at speedup 1 (an 8-token answer
// takes about 70 ms) with faults f.
func faultServer(t *testing.T, set FaultSet) (*testServer, *Faults) {
	t.Helper()
	f := mustFaults(t, set, 1)
	return startServer(t, Options{}, true, ServerOptions{Faults: f}), f
}

// settled waits until nothing is in flight and rank 0 holds nothing, as
// after a cancelled request, and returns the engine's stats.
func settled(t *testing.T, e *Engine) Stats {
	t.Helper()
	eventually(t, "the engine to settle", func() bool {
		st := e.Stats()
		r := st.Ranks[0]
		return st.InFlight == 0 && r.Running == 0 && r.Waiting == 0 && r.UsedBlocks == 0
	})
	return e.Stats()
}

// Each fault, over the OpenAI HTTP API, streamed and not: what the client
// sees, that the engine is left holding nothing, and that exactly that
// fault was counted.
func TestFaultsOverHTTP(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		chat      bool
		stream    bool
		maxTokens int
		timeout   time.Duration
		check     func(t *testing.T, a answer, st RankStats)
	}{
		{"error", FaultError, false, false, 8, 10 * time.Second, func(t *testing.T, a answer, st RankStats) {
			var body errorBody
			if a.status != http.StatusInternalServerError || json.Unmarshal([]byte(a.body), &body) != nil ||
				body.Error.Type != "InternalServerError" || body.Error.Code != 500 || body.Error.Message != faultErrorMessage {
				t.Fatalf("status %d, body %s; want 500 in OpenAI's shape", a.status, a.body)
			}
			if st.Steps != 0 || len(st.Finished) != 0 {
				t.Fatalf("the engine ran the refused request: %d steps, finished %v", st.Steps, st.Finished)
			}
		}},
		{"error, streamed chat", FaultError, true, true, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			if a.status != http.StatusInternalServerError || !strings.Contains(a.body, "InternalServerError") {
				t.Fatalf("status %d, body %s; want 500", a.status, a.body)
			}
		}},
		{"reset, streamed", FaultReset, false, true, 200, 10 * time.Second, func(t *testing.T, a answer, st RankStats) {
			if n, _ := a.tokens(t); !errors.Is(a.readErr, syscall.ECONNRESET) || a.done || n < 100 || n == 200 {
				t.Fatalf("%d tokens, then %v, [DONE] %v; want at least half of 200, then a TCP reset", n, a.readErr, a.done)
			}
			if st.Finished[FinishAbort] != 1 {
				t.Fatalf("finished %v; want the request aborted, as a cancelled one", st.Finished)
			}
		}},
		{"reset, streamed chat", FaultReset, true, true, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			if n, _ := a.tokens(t); !errors.Is(a.readErr, syscall.ECONNRESET) || a.done || n < 4 {
				t.Fatalf("%d tokens, then %v, [DONE] %v; want at least 4, then a TCP reset", n, a.readErr, a.done)
			}
		}},
		{"reset, not streamed", FaultReset, false, false, 8, 10 * time.Second, func(t *testing.T, a answer, st RankStats) {
			if !errors.Is(a.doErr, syscall.ECONNRESET) {
				t.Fatalf("got %v, %d %s; want a TCP reset", a.doErr, a.status, a.body)
			}
			if st.Finished[FinishLength] != 1 {
				t.Fatalf("finished %v; want the request run to its end first", st.Finished)
			}
		}},
		{"stall, streamed", FaultStall, false, true, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			gap, before, next := longestGap(a.times) // [DONE] included
			// As over gRPC: the gap read at the client may be short by the
			// earlier event's late receipt; the event after the stall
			// cannot come before the stall's time since the request.
			if n, finished := a.tokens(t); !a.done || n != 8 || !finished || gap < testPause/2 || before < 4 || next < testPause {
				t.Fatalf("%d tokens, [DONE] %v, finish reason %v, longest gap %v after %d events, the next at %v; want all, ended, a stall of %v after 4",
					n, a.done, finished, gap, before, next, testPause)
			}
		}},
		{"stall, not streamed", FaultStall, false, false, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			if a.status != http.StatusOK || a.elapsed < testPause {
				t.Fatalf("status %d after %v; want 200 after at least %v", a.status, a.elapsed, testPause)
			}
		}},
		{"slow first token, streamed chat", FaultSlowFirstToken, true, true, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			if n, _ := a.tokens(t); !a.done || n != 8 || a.times[0] < testPause {
				t.Fatalf("%d tokens, [DONE] %v, first event after %v; want all, after %v", n, a.done, a.times, testPause)
			}
		}},
		{"slow first token, not streamed", FaultSlowFirstToken, false, false, 8, 10 * time.Second, func(t *testing.T, a answer, _ RankStats) {
			if a.status != http.StatusOK || a.elapsed < testPause {
				t.Fatalf("status %d after %v; want 200 after at least %v", a.status, a.elapsed, testPause)
			}
		}},
		// keepAliveInterval is 1 s: the client waits for a comment.
		{"never end, streamed", FaultNeverEnd, false, true, 8, 1500 * time.Millisecond, func(t *testing.T, a answer, st RankStats) {
			n, finished := a.tokens(t)
			if n != 8 || finished || a.done || a.comments < 1 || !errors.Is(a.readErr, context.DeadlineExceeded) {
				t.Fatalf("%d tokens, finish reason %v, [DONE] %v, %d comments, ended by %v; want 8 tokens, no end, keep-alives, "+
					"until the client gave up", n, finished, a.done, a.comments, a.readErr)
			}
			if st.Finished[FinishLength] != 1 {
				t.Fatalf("finished %v; want the engine done with it", st.Finished)
			}
		}},
		{"never end, not streamed", FaultNeverEnd, true, false, 8, 500 * time.Millisecond, func(t *testing.T, a answer, _ RankStats) {
			if !errors.Is(a.doErr, context.DeadlineExceeded) {
				t.Fatalf("got %v, %d %s; want no answer until the client gave up", a.doErr, a.status, a.body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := faultServer(t, certain(tt.fault))
			a := ask(t, s, tt.chat, tt.stream, tt.maxTokens, tt.timeout)
			if tt.fault == FaultReset {
				// The engine is done with a request it reset before its
				// peer sees the reset: a proxy that hands the slot on then
				// never finds it still in flight.
				if st := s.engine.Stats(); st.InFlight != 0 || st.Ranks[0].Running != 0 {
					t.Errorf("at the reset: %d in flight, %d running; want none", st.InFlight, st.Ranks[0].Running)
				}
			}
			st := settled(t, s.engine)
			tt.check(t, a, st.Ranks[0])
			for k, n := range f.Injected() {
				if want := map[bool]uint64{true: 1}[k == tt.fault]; n != want {
					t.Errorf("%s counted %d times, want %d", k, n, want)
				}
			}
			if st.InFlightMax != 1 {
				t.Errorf("in flight at most %d, want 1", st.InFlightMax)
			}
		})
	}
}

// Without faults the answers are as before: the fault hooks change nothing.
func TestNoFaultOverHTTP(t *testing.T) {
	s, f := faultServer(t, DefaultFaultSet())
	for _, chat := range []bool{false, true} {
		a := ask(t, s, chat, true, 8, 10*time.Second)
		if n, finished := a.tokens(t); n != 8 || !finished || !a.done || a.comments != 0 || a.readErr != nil {
			t.Fatalf("chat %v: %d tokens, finish reason %v, [DONE] %v, %d comments, %v", chat, n, finished, a.done, a.comments, a.readErr)
		}
		if a := ask(t, s, chat, false, 8, 10*time.Second); a.status != http.StatusOK {
			t.Fatalf("chat %v, not streamed: %d %s", chat, a.status, a.body)
		}
	}
	for k, n := range f.Injected() {
		if n != 0 {
			t.Errorf("%s counted %d times", k, n)
		}
	}
}

// Over HTTP/2, where no connection can be hijacked, a reset aborts the
// stream: the client gets an error mid-stream and the request is aborted.
func TestFaultResetOverHTTP2(t *testing.T) {
	e := newEngine(t, Options{})
	runEngine(t, e)
	h, err := NewHandler(ServerOptions{Engine: e, Faults: mustFaults(t, certain(FaultReset), 1)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	a := ask(t, &testServer{url: srv.URL, client: srv.Client(), engine: e}, false, true, 200, 10*time.Second)
	if n, _ := a.tokens(t); a.proto != 2 || a.readErr == nil || a.done || n < 100 || n == 200 {
		t.Fatalf("HTTP/%d: %d tokens, then %v, [DONE] %v; want HTTP/2, half of 200 tokens, then an error", a.proto, n, a.readErr, a.done)
	}
	if st := settled(t, e).Ranks[0]; st.Finished[FinishAbort] != 1 {
		t.Fatalf("finished %v; want the request aborted", st.Finished)
	}
}

// A reset ends the request at the engine before it cuts the connection,
// so that the engine is never seen still counting a request whose peer
// already saw its reset.
func TestCutEndsTheRequestFirst(t *testing.T) {
	var done bool
	p := &faultPlan{done: func() { done = true }}
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("cut of an unhijackable writer panicked with %v, want http.ErrAbortHandler", v)
		}
		if !done {
			t.Error("the connection was cut before the request ended at the engine")
		}
	}()
	p.cut(httptest.NewRecorder())
}
