package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/proxy"
)

// streamEngine answers each request with an SSE stream of n tokens, after
// reading the whole body; it waits at each step for the test.
type streamEngine struct {
	bodyRead   chan struct{} // the body was read; the engine waits on first
	first      chan struct{}
	firstSent  chan struct{} // the first token was flushed; it waits on rest
	rest       chan struct{}
	status     int
	tokens     int
	seenRank   atomic.Value
	bodyLength atomic.Int64
}

func newStreamEngine(tokens int) *streamEngine {
	return &streamEngine{bodyRead: make(chan struct{}, 16), first: make(chan struct{}), firstSent: make(chan struct{}, 16),
		rest: make(chan struct{}), status: http.StatusOK, tokens: tokens}
}

func (e *streamEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := readAll(r)
	e.bodyLength.Store(n)
	e.seenRank.Store(r.Header.Get(proxy.RankHeader))
	e.bodyRead <- struct{}{}
	<-e.first
	if e.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		_, _ = fmt.Fprint(w, `{"error":{"message":"no","type":"x","code":400}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range e.tokens {
		_, _ = fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d\"}]}\n\n", i)
		w.(http.Flusher).Flush()
		if i == 0 {
			e.firstSent <- struct{}{}
			<-e.rest
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
}

// okEngine answers every request 200 at once.
func okEngine(t *testing.T) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
}

func readAll(r *http.Request) (int64, error) {
	var n int64
	buf := make([]byte, 4096)
	for {
		m, err := r.Body.Read(buf)
		n += int64(m)
		if err != nil {
			return n, nil
		}
	}
}

// prompt is a completions body whose prompt is 400 bytes: 100 tokens.
var prompt = `{"model":"m","stream":true,"prompt":"` + strings.Repeat("abcd", 100) + `"}`

func trackedHarness(t *testing.T, eng http.Handler, limits limiter.Options, extra func(*proxy.Options)) (*harness, *inflight.Tracker) {
	t.Helper()
	tr := inflight.New(nil)
	h := newHarness(t, harnessConfig{engine: eng, limits: limits, options: extra, gate: func(o *gate.Options) {
		o.Flights = tr
	}})
	return h, tr
}

func view(tr *inflight.Tracker) load.Rank { return tr.View([]int{0}, 16)[0] }

// TestFlightFollowsTheRequest: the prompt counts as prefill once the body
// has passed, until the first token; the tokens fill decode blocks; the
// flight ends with the request.
func TestFlightFollowsTheRequest(t *testing.T) {
	eng := newStreamEngine(20)
	h, tr := trackedHarness(t, eng, limiter.Options{Slots: 1, QueueLen: 2}, nil)
	done := h.goDo(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt)))

	receive(t, "engine read the body", eng.bodyRead)
	waitFor(t, "prompt estimated", func() bool { return view(tr).ActivePrefillTokens.N == 100 })
	if v := view(tr); v.Flights.N != 1 || v.ActiveDecodeBlocks.N != 7 { // 100 tokens in blocks of 16
		t.Errorf("before the first token: %+v, want 1 flight, 7 blocks", v)
	}
	close(eng.first)
	receive(t, "first token sent", eng.firstSent)
	waitFor(t, "prefill over", func() bool { return view(tr).ActivePrefillTokens.N == 0 })
	close(eng.rest)
	res := <-done
	if res.err != nil || res.status != http.StatusOK || eng.bodyLength.Load() != int64(len(prompt)) {
		t.Fatalf("answer %d %v, engine read %d of %d bytes", res.status, res.err, eng.bodyLength.Load(), len(prompt))
	}
	waitFor(t, "flight ended", func() bool { return tr.Len() == 0 })
}

// TestQueuedRequestIsTracked: a request whose body was read while it
// waited is estimated from the bytes replayed to the engine.
func TestQueuedRequestIsTracked(t *testing.T) {
	eng := newStreamEngine(2)
	h, tr := trackedHarness(t, eng, limiter.Options{Slots: 1, QueueLen: 2}, nil)
	first := h.goDo(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt)))
	receive(t, "first request at the engine", eng.bodyRead)
	second := h.goDo(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt)))
	h.waitStats("second queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	eng.first <- struct{}{} // the first request streams and ends
	close(eng.rest)
	receive(t, "second request at the engine", eng.bodyRead)
	// The second, its body replayed from what was read while it waited,
	// is counted before its first token.
	waitFor(t, "the queued request's prompt", func() bool {
		v := view(tr)
		return v.Flights.N == 1 && v.ActivePrefillTokens.N == 100
	})
	close(eng.first)
	for _, ch := range []<-chan result{first, second} {
		if res := <-ch; res.status != http.StatusOK {
			t.Fatalf("answer %d %v", res.status, res.err)
		}
	}
	waitFor(t, "flights ended", func() bool { return tr.Len() == 0 })
	if got := h.waitDone(2).done[string(gate.AdmittedQueued)]; got != 1 {
		t.Errorf("admitted_queued = %d, want 1", got)
	}
}

// TestRankHeaderPinsTheFlight: a request for rank 1 counts on rank 1 only,
// and the header reaches the engine unchanged.
func TestRankHeaderPinsTheFlight(t *testing.T) {
	eng := newStreamEngine(1)
	h, tr := trackedHarness(t, eng, limiter.Options{Slots: 2, QueueLen: 2}, nil)
	req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt))
	req.Header.Set(proxy.RankHeader, "1")
	done := h.goDo(req)
	receive(t, "engine read the body", eng.bodyRead)
	waitFor(t, "prompt on rank 1", func() bool {
		v := tr.View([]int{0, 1}, 16)
		return v[0].Flights.N == 0 && v[1].ActivePrefillTokens.N == 100
	})
	close(eng.first)
	close(eng.rest)
	<-done
	if got := eng.seenRank.Load(); got != "1" {
		t.Errorf("engine saw %s %q, want 1", proxy.RankHeader, got)
	}
}

// TestUncountableAnswersEndPrefill: an engine error, or a compressed
// stream the proxy cannot read, ends the prefill with the headers, while
// the request still holds its slot.
func TestUncountableAnswersEndPrefill(t *testing.T) {
	for name, header := range map[string]func(w http.ResponseWriter){
		"error": func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) },
		"gzip": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Encoding", "gzip")
		},
	} {
		t.Run(name, func(t *testing.T) {
			headersSent, finish := make(chan struct{}), make(chan struct{})
			eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = readAll(r)
				header(w)
				_, _ = w.Write([]byte("\x1f\x8b not text"))
				w.(http.Flusher).Flush()
				close(headersSent)
				<-finish
			})
			h, tr := trackedHarness(t, eng, limiter.Options{Slots: 1, QueueLen: 2}, nil)
			var once sync.Once
			release := func() { once.Do(func() { close(finish) }) }
			t.Cleanup(release) // before the servers close, even on failure
			done := h.goDo(newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt)))
			receive(t, "engine answered", headersSent)
			waitFor(t, "prefill over with the request in flight", func() bool {
				v := view(tr)
				return v.Flights.N == 1 && v.ActivePrefillTokens.N == 0 && v.ActiveDecodeBlocks.N == 7
			})
			release()
			<-done
			waitFor(t, "flight ended", func() bool { return tr.Len() == 0 })
		})
	}
}

// TestProtocolSwitchWithTracking: a 101 answer keeps the writable body
// ReverseProxy needs, so an upgrade works with token counting on.
func TestProtocolSwitchWithTracking(t *testing.T) {
	eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	})
	h, tr := trackedHarness(t, eng, limiter.Options{Slots: 1, QueueLen: 2}, nil)
	conn, rd := h.rawConn()
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"))
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer: %v, %v", resp, err)
	}
	_, _ = conn.Write([]byte("hello\n"))
	if line, err := rd.ReadString('\n'); err != nil || line != "echo hello\n" {
		t.Errorf("through the upgraded connection: %q, %v", line, err)
	}
	if v := view(tr); v.Flights.N != 1 || v.ActivePrefillTokens.N != 0 {
		t.Errorf("upgraded request: %+v, want one flight, nothing to prefill", v)
	}
}

// countingReport is a load report whose value counts its calls: "TEXT
// named_metrics.n=1", then 2, and so on.
func countingReport(calls *atomic.Int64) *proxy.LoadReport {
	return &proxy.LoadReport{Key: "endpoint-load-metrics", Value: func(http.Header) string {
		return "TEXT named_metrics.n=" + strconv.FormatInt(calls.Add(1), 10)
	}}
}

// TestLoadReportOnProxiedAnswersOnly: the load report is added to what
// the engine answers, not to slotgate's own refusals, and replaces an
// engine's own.
func TestLoadReportOnProxiedAnswersOnly(t *testing.T) {
	var calls atomic.Int64
	eng := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Endpoint-Load-Metrics", "TEXT named_metrics.engine=1")
		_, _ = w.Write([]byte("{}"))
	})
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 2},
		options: func(o *proxy.Options) { o.LoadReport = countingReport(&calls) }})
	res := h.get("/v1/models/x")
	if got := res.header.Values("Endpoint-Load-Metrics"); res.status != http.StatusOK || len(got) != 1 || got[0] != "TEXT named_metrics.n=1" {
		t.Errorf("proxied answer: %d, header %q", res.status, got)
	}
	h.proxy.StartDraining()
	res = h.get("/v1/models/x")
	if res.status != http.StatusServiceUnavailable || res.header.Get("Endpoint-Load-Metrics") != "" {
		t.Errorf("refusal: %d, header %q; want 503 without the header", res.status, res.header.Get("Endpoint-Load-Metrics"))
	}
	if calls.Load() != 1 {
		t.Errorf("the report was taken %d times, want 1", calls.Load())
	}
}

// TestLoadReportTrailer: a streamed answer to an HTTP/1.1 client that
// sends "TE: trailers" carries the report in its headers and, taken again
// at its end, in its trailer; without TE, or for an answer of known
// length, the headers only.
func TestLoadReportTrailer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		te      string
		tokens  int // 0: an answer of known length
		trailer string
	}{
		{name: "streamed, TE trailers", te: "trailers", tokens: 3, trailer: "TEXT named_metrics.n=2"},
		{name: "streamed, TE with other codings", te: "gzip, Trailers;q=1", tokens: 3, trailer: "TEXT named_metrics.n=2"},
		{name: "streamed, no TE", tokens: 3},
		{name: "known length, TE trailers", te: "trailers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			var eng http.Handler = okEngine(t)
			if tc.tokens > 0 {
				se := newStreamEngine(tc.tokens)
				close(se.first)
				close(se.rest)
				eng = se
			}
			h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1},
				options: func(o *proxy.Options) { o.LoadReport = countingReport(&calls) }})
			req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(`{"prompt":"x","stream":true}`))
			if tc.te != "" {
				req.Header.Set("TE", tc.te)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Endpoint-Load-Metrics"); got != "TEXT named_metrics.n=1" {
				t.Errorf("header %q, want the first report", got)
			}
			if got := resp.Trailer.Get("Endpoint-Load-Metrics"); got != tc.trailer {
				t.Errorf("trailer %q, want %q (trailers %v)", got, tc.trailer, resp.Trailer)
			}
		})
	}
}

// TestBusyRefusesBeforeAdmission: while Busy says so, requests get the
// overload status with reason busy and never reach the engine or a slot.
func TestBusyRefusesBeforeAdmission(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	h := newHarness(t, harnessConfig{engine: okEngine(t), limits: limiter.Options{Slots: 1, QueueLen: 2},
		gate: func(o *gate.Options) { o.Busy = busy.Load }})
	res := h.get("/v1/models/x")
	if res.status != 529 || res.header.Get(proxy.ReasonHeader) != "busy" || !strings.Contains(res.body, gate.MessageBusy) {
		t.Errorf("while busy: %d %q %q", res.status, res.header.Get(proxy.ReasonHeader), res.body)
	}
	if n := h.engine.count("/v1/models/x"); n != 0 {
		t.Errorf("engine saw %d requests while busy", n)
	}
	if s := h.lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
		t.Errorf("limiter %+v after a busy refusal", s)
	}
	h.waitOutcome(gate.RejectedBusy)
	busy.Store(false)
	if res := h.get("/v1/models/x"); res.status != http.StatusOK {
		t.Errorf("after busy: %d, want 200", res.status)
	}
}

// TestChangedOnQueueAndEnd: Changed is called when a request enters the
// queue and when each request ends, so a load publisher sees the queue.
func TestChangedOnQueueAndEnd(t *testing.T) {
	var changes atomic.Int64
	g := newHeldEngine()
	h := newHarness(t, harnessConfig{engine: g, limits: limiter.Options{Slots: 1, QueueLen: 1},
		gate: func(o *gate.Options) { o.Changed = func() { changes.Add(1) } }})
	first := h.hold(g, "/v1/x")
	second := h.goDo(newRequest(t, http.MethodGet, h.url("/v1/x"), nil))
	h.waitStats("second queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	waitFor(t, "Changed on queueing", func() bool { return changes.Load() == 1 })
	g.release()
	<-first
	<-second
	waitFor(t, "Changed on each end", func() bool { return changes.Load() == 3 })
	h.proxy.StartDraining()
	_ = h.get("/v1/x") // a refusal ends too
	waitFor(t, "Changed on the refusal", func() bool { return changes.Load() == 4 })
}
