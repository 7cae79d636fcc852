package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
	"github.com/slotgate/slotgate/relay"
)

// newRelayHarness is a harness whose proxy carries event streams on a
// relay of its own (--stream-relay epoll), giving connections back to
// the front server after each answer.
func newRelayHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	var h *harness
	rel, stop := startRelay(t, func() *http.Server { return h.front.Config })
	options := cfg.options
	cfg.options = func(o *proxy.Options) {
		o.Relay = rel
		if options != nil {
			options(o)
		}
	}
	h = newHarness(t, cfg)
	t.Cleanup(stop) // before the server closes: no connection is given back to it as it does
	return h
}

// startRelay runs a relay of one loop until the test ends, or stop, and
// returns it as a proxy's Relay, giving connections back to the server
// front returns once the proxy serves (once stopped, it closes them
// instead); it skips where there is no relay. A test whose server closes
// in a cleanup registers stop after it, so that the relay does not give a
// connection back to the server while it closes.
func startRelay(tb testing.TB, front func() *http.Server) (*proxy.Relay, func()) {
	tb.Helper()
	r, err := relay.New(1)
	if err != nil {
		tb.Skipf("no stream relay here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	var mu sync.Mutex
	ended := false
	stop := func() {
		cancel()
		<-stopped
		mu.Lock()
		ended = true
		mu.Unlock()
	}
	tb.Cleanup(stop)
	resume := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			_ = c.Close()
			return
		}
		proxy.Resume(front(), c)
	}
	return &proxy.Relay{Loops: r, Resume: resume}, stop
}

// sseEngine streams n events, each flushed on its own, every gap.
func sseEngine(n int, gap time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Engine", "sim")
		for i := range n {
			if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\" w%d\"}}]}\n\n", i); err != nil {
				return
			}
			if http.NewResponseController(w).Flush() != nil {
				return
			}
			time.Sleep(gap)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
}

// wantSSE is what sseEngine(n, _) sends.
func wantSSE(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"delta\":{\"content\":\" w%d\"}}]}\n\n", i)
	}
	return b.String() + "data: [DONE]\n\n"
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`

func relayRequest(extra string) string {
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(chatBody), chatBody)
}

// sendRaw writes req (hand-written HTTP/1.1) on a new connection to the
// front server and reads the answer's head.
func sendRaw(t *testing.T, h *harness, req string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := h.rawConn()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

// TestRelayKeepsTheConnection sends three streamed requests, then a GET,
// on one connection, the second pipelined behind the first: each is
// answered whole and in order, the connection is kept, every slot comes
// back, and each relayed answer has its access-log line.
func TestRelayKeepsTheConnection(t *testing.T) {
	h := newRelayHarness(t, harnessConfig{engine: sseEngine(20, time.Millisecond), limits: limiter.Options{Slots: 2}})
	c, br := h.rawConn()
	if _, err := io.WriteString(c, relayRequest("")+relayRequest("")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if i == 2 {
			if _, err := io.WriteString(c, relayRequest("")); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(body) != wantSSE(20) || resp.Close {
			t.Fatalf("answer %d: status %d, close %v, err %v, body %q", i, resp.StatusCode, resp.Close, err, body)
		}
		if resp.Header.Get("X-Engine") != "sim" || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Date") == "" {
			t.Errorf("answer %d: headers %v, want the engine's and a Date", i, resp.Header)
		}
	}
	if _, err := io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the plain request after the streams: %v %v", resp, err)
	}
	h.waitDone(4)
	// The server sees a resumed connection as a new one: the first, and
	// one for each relayed answer (sseEngine streams the GET too), all on
	// the client's one socket.
	waitFor(t, "the front server to take 5 connections (1 accepted, 4 given back by the relay)",
		func() bool { return h.conns.Load() == 5 })
	h.waitStats("every slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
	streams := 0
	for _, l := range h.accessLines() {
		if l["path"] == "/v1/chat/completions" {
			streams++
			if l["status"] != int64(200) || l["outcome"] != string(gate.AdmittedDirect) || l["bytes_out"] != int64(len(wantSSE(20))) {
				t.Errorf("access line %v: want 200, admitted_direct, %d bytes out", l, len(wantSSE(20)))
			}
			// The request itself is let go once relayed: what the line
			// names of it is kept.
			if l["method"] != http.MethodPost || l["proto"] != "HTTP/1.1" || !strings.HasPrefix(fmt.Sprint(l["client"]), "127.0.0.1:") {
				t.Errorf("access line %v: want a POST over HTTP/1.1 from 127.0.0.1", l)
			}
		}
	}
	if streams != 3 {
		t.Errorf("%d access lines for the streams, want 3", streams)
	}
}

// TestRelayedClientFindsItsSlotFree: a client that has read its relayed
// answer's end finds the slot free at once, as on net/http's path, whose
// handler ends the exchange before the body's last chunk goes out: the
// relay hands the slot on once it has read the engine's end, before it
// writes that end to the client. With one slot and no queue, the next
// request, sent the moment the answer ended, is admitted every time.
func TestRelayedClientFindsItsSlotFree(t *testing.T) {
	h := newRelayHarness(t, harnessConfig{engine: sseEngine(2, 0), limits: limiter.Options{Slots: 1}})
	for i := range 30 {
		resp, c, _ := sendRaw(t, h, relayRequest(""))
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != wantSSE(2) {
			t.Fatalf("answer %d: status %d, err %v, body %q", i, resp.StatusCode, err, body)
		}
		if s := h.lim.Stats(); s.Holding != 0 || s.Prefilling != 0 {
			t.Fatalf("answer %d read to its end: %d holding a slot, %d a waiting place; want none", i, s.Holding, s.Prefilling)
		}
		_ = c.Close()
	}
}

// TestRelayClientLeaves closes the client's connection mid-stream: the
// engine's connection is closed, the slot comes back, and the outcome is
// cancelled_running.
func TestRelayClientLeaves(t *testing.T) {
	engineSaw := make(chan error, 1)
	eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, "data: {}\n\n"); err != nil {
				engineSaw <- err
				return
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				engineSaw <- err
				return
			}
			select {
			case <-r.Context().Done():
				engineSaw <- r.Context().Err()
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	h := newRelayHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1}})
	resp, c, _ := sendRaw(t, h, relayRequest(""))
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	receive(t, "the engine to see the client leave", engineSaw)
	h.waitOutcome(gate.CancelledRunning)
	h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
	// Logged as the ReverseProxy's path logs it: the status the client
	// saw, 200, and the outcome that says it left. (The line follows the
	// outcome's report.)
	waitFor(t, "the access-log line", func() bool { return len(h.accessLines()) == 1 })
	lines := h.accessLines()
	if len(lines) != 1 || lines[0]["status"] != int64(200) || lines[0]["outcome"] != string(gate.CancelledRunning) {
		t.Errorf("access lines %v, want one with status 200, outcome cancelled_running", lines)
	}
}

// TestRelayEngineCuts: an engine that ends the connection mid-answer cuts
// the client's connection too (it cannot be told otherwise once the head
// went), and the outcome is engine_error.
func TestRelayEngineCuts(t *testing.T) {
	u := rawEngine(t, readThen(func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"a\r\ndata: {}\n\n\r\n5\r\nda")
		_ = c.Close()
	}))
	h := newRelayHarness(t, harnessConfig{engineURL: u, limits: limiter.Options{Slots: 1}})
	resp, _, _ := sendRaw(t, h, relayRequest(""))
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("the cut answer read to an end: %q", body)
	}
	h.waitOutcome(gate.EngineError)
	h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
}

// TestRelayConnectionClose: a client that asks for the connection's close
// gets it after the relayed answer, said in the head.
func TestRelayConnectionClose(t *testing.T) {
	h := newRelayHarness(t, harnessConfig{engine: sseEngine(3, 0), limits: limiter.Options{Slots: 1}})
	resp, _, br := sendRaw(t, h, relayRequest("Connection: close\r\n"))
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != wantSSE(3) || !resp.Close {
		t.Fatalf("body %q, err %v, close %v; want the whole stream and a close", body, err, resp.Close)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the answer: read %d, %v; want the connection closed", n, err)
	}
}

// TestRelayLeavesOtherAnswers: a JSON answer, an HTTP/1.0 client's stream
// and a HEAD stay with the ReverseProxy, and are answered as before.
func TestRelayLeavesOtherAnswers(t *testing.T) {
	eng := http.NewServeMux()
	eng.Handle("/v1/chat/completions", sseEngine(3, 0))
	eng.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	h := newRelayHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1}})
	res := h.do(mustRequest(t, http.MethodPost, h.url("/v1/completions"), `{}`))
	if res.err != nil || res.status != 200 || res.body != `{"ok":true}` {
		t.Errorf("JSON answer: %+v", res)
	}
	c, br := h.rawConn()
	req := strings.Replace(relayRequest(""), "HTTP/1.1", "HTTP/1.0", 1)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != wantSSE(3) || len(resp.TransferEncoding) != 0 {
		t.Errorf("HTTP/1.0 stream: body %q, err %v, transfer encoding %v; want the stream, unchunked", body, err, resp.TransferEncoding)
	}
	h.waitDone(2)
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestRelayStopped: a relay that has stopped refuses the stream after its
// head went out. The exchange, which let its request go before the
// relay's answer, still ends whole on the handler: engine_error, the slot
// back, and an access-log line that names the request.
func TestRelayStopped(t *testing.T) {
	r, err := relay.New(1)
	if err != nil {
		t.Skipf("no stream relay here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Run(ctx) // returns at once, its loops stopped
	var h *harness
	h = newHarness(t, harnessConfig{engine: sseEngine(3, 0), limits: limiter.Options{Slots: 1},
		options: func(o *proxy.Options) {
			o.Relay = &proxy.Relay{Loops: r, Resume: func(c net.Conn) { proxy.Resume(h.front.Config, c) }}
		}})
	resp, _, _ := sendRaw(t, h, relayRequest(""))
	if body, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("the refused stream read to an end: %q", body)
	}
	h.waitOutcome(gate.EngineError)
	h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
	waitFor(t, "the access-log line", func() bool { return len(h.accessLines()) == 1 })
	l := h.accessLines()[0]
	if l["method"] != http.MethodPost || l["path"] != "/v1/chat/completions" || l["outcome"] != string(gate.EngineError) {
		t.Errorf("access line %v: want a POST to /v1/chat/completions, engine_error", l)
	}
}

// TestRelayLongPrompt: a request whose prompt is too long to be held
// whole streams to the engine as it is read, arrives there byte for
// byte, and its event stream is still relayed (the body was read to its
// end before the answer), on a connection kept for the next request.
func TestRelayLongPrompt(t *testing.T) {
	for _, size := range []int{40 << 10, 100 << 10} {
		t.Run(fmt.Sprint(size>>10, "KiB"), func(t *testing.T) {
			got := make(chan string, 2)
			sse := sseEngine(5, 0)
			eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- string(b)
				sse.ServeHTTP(w, r)
			})
			var h *harness
			rel, stop := startRelay(t, func() *http.Server { return h.front.Config })
			h = newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 2},
				options: func(o *proxy.Options) { o.Relay = rel }})
			t.Cleanup(stop)
			body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` +
				strings.Repeat("w", size) + `"}]}`
			req := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
				fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
			c, br := h.rawConn()
			for i := range 2 {
				if _, err := io.WriteString(c, req); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d: %v", i, err)
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != 200 || string(b) != wantSSE(5) || resp.Close {
					t.Fatalf("answer %d: status %d, close %v, err %v, body %q", i, resp.StatusCode, resp.Close, err, b)
				}
				if sent := <-got; sent != body {
					t.Fatalf("request %d: the engine got %d bytes, not the %d sent", i, len(sent), len(body))
				}
			}
			if n := rel.Loops.Added(); n != 2 {
				t.Errorf("the relay carried %d streams, want 2", n)
			}
			h.waitStats("every slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
		})
	}
}
