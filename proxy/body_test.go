package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// bodyEngine records the bodies it receives and, on paths other than
// /hold, answers with what it read.
type bodyEngine struct {
	held *heldEngine
	mu   sync.Mutex
	got  [][]byte
}

func (e *bodyEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hold" {
		e.held.ServeHTTP(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.got = append(e.got, b)
	e.mu.Unlock()
	_, _ = fmt.Fprintf(w, "read %d", len(b))
}

func (e *bodyEngine) bodies() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got
}

// TestRequestBodyTimeout: a body that has not arrived within the body
// timeout is answered 408, the connection closed, and its slot (or queue
// place) handed on; the engine never gets a request from it, or gets it cut.
func TestRequestBodyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued bool   // the request waits behind a held one
		head   string // sent, then nothing more
	}{
		{"admitted, declared length", false, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\":"},
		{"admitted, chunked", false, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
		// A long body streams to the engine as it comes: cut half-way.
		{"admitted, long, declared length", false, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 40000\r\n\r\n{\"prompt\":\"" +
			strings.Repeat("w", 20000)},
		{"queued, declared length", true, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\":"},
		{"queued, chunked", true, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &bodyEngine{held: newHeldEngine()}
			defer eng.held.release()
			h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 2},
				options: func(o *proxy.Options) { o.RequestBodyTimeout = 300 * time.Millisecond }})
			holder := make(<-chan result)
			if tc.queued {
				holder = h.hold(eng.held, "/hold")
			}
			conn, rd := h.rawConn()
			if _, err := io.WriteString(conn, tc.head); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get(proxy.ReasonHeader) != "body_timeout" || !resp.Close {
				t.Errorf("answer %d %q close=%v, want 408 body_timeout, closing", resp.StatusCode, resp.Header.Get(proxy.ReasonHeader), resp.Close)
			}
			if want := errorJSON("Request body did not arrive in time", "invalid_request_error", http.StatusRequestTimeout); string(body) != want {
				t.Errorf("body %q, want %q", body, want)
			}
			if tc.queued {
				eng.held.release()
				if r := <-holder; r.status != http.StatusOK {
					t.Errorf("holder got %d", r.status)
				}
				h.waitDone(2)
			} else {
				h.waitOutcome(gate.RejectedBodyTimeout)
			}
			if s := h.obs.snapshot(); s.done[string(gate.RejectedBodyTimeout)] != 1 {
				t.Errorf("outcomes %v, want one rejected_body_timeout", s.done)
			}
			h.waitStats("the slot and queue place back", func(s limiter.Stats) bool { return s.Holding == 0 && s.Waiting == 0 })
			if got := eng.bodies(); len(got) != 0 {
				t.Errorf("the engine read %d whole bodies, want none", len(got))
			}
		})
	}
}

// TestRequestBodyTimeoutSparesLongAnswers: the deadline covers the body
// only. Once the body arrived, a stream that lasts longer than the body
// timeout is served whole, for a request admitted at once and for one read
// while it waited.
func TestRequestBodyTimeoutSparesLongAnswers(t *testing.T) {
	for _, tc := range []struct{ queued, h2c bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		queued := tc.queued
		t.Run(fmt.Sprintf("queued=%v,h2c=%v", tc.queued, tc.h2c), func(t *testing.T) {
			held := newHeldEngine()
			defer held.release()
			slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hold" {
					held.ServeHTTP(w, r)
					return
				}
				_, _ = io.Copy(io.Discard, r.Body)
				for i := range 5 {
					_, _ = fmt.Fprintf(w, "data: %d\n\n", i)
					w.(http.Flusher).Flush()
					time.Sleep(100 * time.Millisecond)
				}
			})
			h := newHarness(t, harnessConfig{engine: slow, limits: limiter.Options{Slots: 1, QueueLen: 1}, h2c: tc.h2c,
				options: func(o *proxy.Options) { o.RequestBodyTimeout = 150 * time.Millisecond }})
			if queued {
				h.hold(held, "/hold")
			}
			req, _ := http.NewRequest(http.MethodPost, h.url("/v1/completions"), strings.NewReader(strings.Repeat("x", 100<<10)))
			ch := h.goDo(req)
			if queued {
				h.waitStats("the request queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
				time.Sleep(200 * time.Millisecond) // past the body timeout, body long read
				held.release()
			}
			r := <-ch
			if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "data: 4") {
				t.Errorf("answer %d %q %v, want the whole stream", r.status, r.body, r.err)
			}
		})
	}
}

// TestBufferedBodyBudget: bodies read while their requests wait share one
// budget. A body that does not fit waits unread and streams to the engine
// once admitted; one that fits is read; either way the engine gets every
// byte, in order, and the budget is whole again afterwards.
func TestBufferedBodyBudget(t *testing.T) {
	const budget = 96 << 10
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		held    int64 // of the budget, while the request waits
	}{
		{"declared, fits", 32 << 10, false, 32 << 10},
		{"declared, does not fit", 200 << 10, false, 0},
		{"chunked, fits", 32 << 10, true, 32 << 10},
		{"chunked, read in part", 300 << 10, true, 64 << 10}, // one step of 64 KiB; the next does not fit
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &bodyEngine{held: newHeldEngine()}
			defer eng.held.release()
			h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 4},
				options: func(o *proxy.Options) { o.MaxBufferedBodyBytes = budget }})
			for round := range 2 { // the second finds the budget whole again
				eng.held = newHeldEngine()
				holder := h.hold(eng.held, "/hold")
				want := bytes.Repeat([]byte(fmt.Sprintf("%d-", round)), tc.size/2)
				var body io.Reader = bytes.NewReader(want)
				if tc.chunked {
					body = io.MultiReader(body) // hides the length: chunked
				}
				req, _ := http.NewRequest(http.MethodPost, h.url("/v1/completions"), body)
				ch := h.goDo(req)
				h.waitStats("the request queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
				waitFor(t, "the body read as far as the budget allows", func() bool {
					return h.proxy.BudgetLeft() == budget-tc.held
				})
				eng.held.release()
				<-holder
				r := <-ch
				if r.err != nil || r.status != http.StatusOK || r.body != fmt.Sprintf("read %d", len(want)) {
					t.Fatalf("round %d: answer %d %q %v", round, r.status, r.body, r.err)
				}
				got := eng.bodies()
				if last := got[len(got)-1]; !bytes.Equal(last, want) {
					t.Fatalf("round %d: the engine got %d bytes, not the %d sent", round, len(last), len(want))
				}
				waitFor(t, "the budget whole again", func() bool { return h.proxy.BudgetLeft() == budget })
			}
		})
	}
}

// TestNoBufferedBodies: with a negative budget no queued body is read, and
// requests are served all the same.
func TestNoBufferedBodies(t *testing.T) {
	eng := &bodyEngine{held: newHeldEngine()}
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 1},
		options: func(o *proxy.Options) { o.MaxBufferedBodyBytes = -1 }})
	holder := h.hold(eng.held, "/hold")
	req, _ := http.NewRequest(http.MethodPost, h.url("/v1/completions"), strings.NewReader("hello"))
	ch := h.goDo(req)
	h.waitStats("the request queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	eng.held.release()
	<-holder
	if r := <-ch; r.status != http.StatusOK || r.body != "read 5" {
		t.Errorf("answer %d %q %v", r.status, r.body, r.err)
	}
}
