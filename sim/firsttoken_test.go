package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// counts is the engine-wide count of requests before their first token and
// its high-water mark.
type counts struct{ n, max int }

func engineCounts(e *Engine) counts {
	st := e.Stats()
	return counts{st.BeforeFirstToken, st.BeforeFirstTokenMax}
}

func rankCounts(e *Engine, i int) counts {
	rs := e.Stats().Ranks[i]
	return counts{rs.BeforeFirstToken, rs.BeforeFirstTokenMax}
}

// beforeFirstWorld is what a scripted action of TestBeforeFirstTokenCount
// acts on: one engine, its loops not running, and the handles submitted so
// far.
type beforeFirstWorld struct {
	e  *Engine
	hs []*Handle
}

type beforeFirstAction struct {
	what string
	do   func(t *testing.T, w *beforeFirstWorld)
	want counts // engine-wide, after the action
}

func submitReq(prompt, maxTokens int) beforeFirstAction {
	return beforeFirstAction{what: "submit", do: func(t *testing.T, w *beforeFirstWorld) {
		w.hs = append(w.hs, submit(t, w.e, Request{PromptTokens: prompt, MaxTokens: maxTokens, IgnoreEOS: true}))
	}}
}

func stepRank(i int) beforeFirstAction {
	return beforeFirstAction{what: "step", do: func(t *testing.T, w *beforeFirstWorld) {
		if stepOnce(w.e.ranks[i]) == nil {
			t.Fatalf("rank %d had nothing to run", i)
		}
	}}
}

func closeReq(i int) beforeFirstAction {
	return beforeFirstAction{what: "close", do: func(_ *testing.T, w *beforeFirstWorld) { w.hs[i].Close() }}
}

// then sets the counts expected after a.
func (a beforeFirstAction) then(n, max int) beforeFirstAction {
	a.want = counts{n, max}
	return a
}

// The count rises when Submit queues a request and falls when the step
// that samples its first token completes, or when it ends without one;
// the high-water mark keeps the peak. Steps are run by hand, so every
// transition is checked at the exact point it happens.
func TestBeforeFirstTokenCount(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		actions []beforeFirstAction
	}{
		{"arrivals, then one prefill step for all", Options{}, []beforeFirstAction{
			submitReq(10, 4).then(1, 1), submitReq(10, 4).then(2, 2), submitReq(10, 4).then(3, 3),
			stepRank(0).then(0, 3), stepRank(0).then(0, 3), submitReq(10, 4).then(1, 3),
		}},
		{"chunked prefill counts until its last chunk", Options{MaxNumBatchedTokens: 64, MaxNumSeqs: 2}, []beforeFirstAction{
			submitReq(150, 4).then(1, 1), stepRank(0).then(1, 1), stepRank(0).then(1, 1), stepRank(0).then(0, 1),
		}},
		{"waiting behind max-num-seqs", Options{MaxNumSeqs: 1, MaxNumBatchedTokens: 8}, []beforeFirstAction{
			submitReq(4, 2).then(1, 1), submitReq(4, 2).then(2, 2),
			stepRank(0).then(1, 2), // the first has its token, the second waits
			stepRank(0).then(1, 2), // the first ends
			stepRank(0).then(0, 2),
		}},
		{"abort while waiting", Options{}, []beforeFirstAction{
			submitReq(10, 4).then(1, 1), closeReq(0).then(0, 1), closeReq(0).then(0, 1),
		}},
		{"abort during a chunked prefill", Options{MaxNumBatchedTokens: 256}, []beforeFirstAction{
			submitReq(1000, 4).then(1, 1), stepRank(0).then(1, 1), closeReq(0).then(0, 1),
		}},
		{"abort after the first token counts nothing", Options{}, []beforeFirstAction{
			submitReq(10, 4).then(1, 1), stepRank(0).then(0, 1), closeReq(0).then(0, 1),
		}},
		{"a one-token answer ends with its first token", Options{}, []beforeFirstAction{
			submitReq(10, 1).then(1, 1), stepRank(0).then(0, 1), closeReq(0).then(0, 1),
		}},
		// A pool of 3 usable blocks: the second request's decode preempts
		// the first, whose prompt is recomputed without counting again.
		{"recomputation after a preemption", Options{NumGPUBlocks: 4, BlockSize: 16, MaxModelLen: 48, MaxNumSeqs: 2, MaxNumBatchedTokens: 64},
			[]beforeFirstAction{
				submitReq(16, 16).then(1, 1), submitReq(16, 16).then(2, 2), stepRank(0).then(0, 2),
				stepRank(0).then(0, 2), stepRank(0).then(0, 2), stepRank(0).then(0, 2),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &beforeFirstWorld{e: newEngine(t, tt.opts)}
			for i, a := range tt.actions {
				a.do(t, w)
				checkInvariants(t, w.e.ranks[0])
				if got := engineCounts(w.e); got != a.want {
					t.Fatalf("after action %d (%s): count %d, max %d; want %d, %d", i, a.what, got.n, got.max, a.want.n, a.want.max)
				}
				if got := rankCounts(w.e, 0); got != a.want {
					t.Fatalf("after action %d (%s): rank 0 count %d, max %d; want the engine's %d, %d", i, a.what, got.n, got.max, a.want.n, a.want.max)
				}
			}
			if tt.name == "recomputation after a preemption" && w.e.Stats().Ranks[0].Preemptions == 0 {
				t.Fatal("no preemption happened")
			}
		})
	}
}

// A refused request never counts.
func TestBeforeFirstTokenRefused(t *testing.T) {
	e := newEngine(t, Options{MaxNumQueuedReqs: 1})
	submit(t, e, Request{PromptTokens: 4, MaxTokens: 4})
	if _, err := e.Submit(Request{PromptTokens: 4, MaxTokens: 4}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("second Submit: %v, want ErrQueueFull", err)
	}
	if _, err := e.Submit(Request{PromptTokens: 4, MaxTokens: 1 << 20}); !errors.Is(err, ErrTooLong) {
		t.Fatalf("too long: %v", err)
	}
	if got := engineCounts(e); got != (counts{1, 1}) {
		t.Fatalf("count %d, max %d; want 1, 1", got.n, got.max)
	}
}

// Requests that Run's end fails with ErrStopped leave the count.
func TestBeforeFirstTokenStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{MaxNumSeqs: 1, MaxNumBatchedTokens: 8})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		for range 3 {
			submit(t, e, Request{PromptTokens: 8, MaxTokens: 1000, IgnoreEOS: true})
		}
		go func() { done <- e.Run(ctx) }()
		synctest.Wait() // the first step is under way
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := engineCounts(e); got != (counts{0, 3}) {
			t.Fatalf("after Run: count %d, max %d; want 0, 3", got.n, got.max)
		}
	})
}

// The engine-wide peak is its own: here each rank peaks at 2, at
// different times, and the engine at 3.
func TestBeforeFirstTokenRanks(t *testing.T) {
	e := newEngine(t, Options{DataParallelSize: 2})
	req := Request{PromptTokens: 8, MaxTokens: 100, IgnoreEOS: true}
	submit(t, e, req) // rank 0
	submit(t, e, req) // rank 1
	stepOnce(e.ranks[1])
	submit(t, e, req) // rank 0: 2 before their first token
	stepOnce(e.ranks[0])
	for range 3 { // ranks 1, 0, 1: rank 1 has 2 again, rank 0 has 1
		submit(t, e, req)
	}
	want := []counts{{1, 2}, {2, 2}}
	for i, w := range want {
		if got := rankCounts(e, i); got != w {
			t.Errorf("rank %d: count %d, max %d; want %d, %d", i, got.n, got.max, w.n, w.max)
		}
		checkInvariants(t, e.ranks[i])
	}
	if got := engineCounts(e); got != (counts{3, 3}) {
		t.Errorf("engine: count %d, max %d; want 3, 3", got.n, got.max)
	}
}

// syncWriter is a ResponseWriter whose body the test may read while the
// handler writes it.
type syncWriter struct {
	header http.Header // the handler's alone

	mu     sync.Mutex
	status int
	body   bytes.Buffer
}

func newSyncWriter() *syncWriter { return &syncWriter{header: http.Header{}} }

func (w *syncWriter) Header() http.Header { return w.header }

func (w *syncWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = code
	}
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

func (w *syncWriter) Flush() {}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// Through the HTTP handler, on the bubble's clock: a 6000-token prompt is
// counted from its arrival through the whole prefill step, and not from
// the instant that step ends, when a stream writes its first token; a
// non-streaming answer leaves the count then too, before it is written;
// a client that leaves before its first token leaves the count at once.
func TestBeforeFirstTokenOverHTTP(t *testing.T) {
	tests := []struct {
		name           string
		stream, leaves bool
	}{
		{"streaming", true, false},
		{"non-streaming", false, false},
		{"streaming, client leaves", true, true},
		{"non-streaming, client leaves", false, true},
	}
	const prompt = 6000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, Options{})
				runEngine(t, e)
				h, err := NewHandler(ServerOptions{Engine: e})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				body := fmt.Sprintf(`{"prompt":%q,"max_tokens":8,"ignore_eos":true,"stream":%t}`, strings.Repeat("x", prompt*BytesPerToken), tt.stream)
				w := newSyncWriter()
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/completions", strings.NewReader(body)))
				}()
				check := func(when string, want counts, tokenWritten bool) {
					t.Helper()
					synctest.Wait()
					if got := engineCounts(e); got != want {
						t.Fatalf("%s: count %d, max %d; want %d, %d", when, got.n, got.max, want.n, want.max)
					}
					if got := strings.Contains(w.String(), `"text"`); got != tokenWritten {
						t.Fatalf("%s: a token written %v, want %v; body %q", when, got, tokenWritten, w.String())
					}
				}
				check("on arrival", counts{1, 1}, false)
				ttft := StepDuration(prompt, false, 0, 1)
				time.Sleep(ttft - time.Nanosecond)
				check("just before the prefill step ends", counts{1, 1}, false)
				if tt.leaves {
					cancel()
					<-done
					check("after the client left", counts{0, 1}, false)
					if n := e.Stats().Ranks[0].Finished[FinishAbort]; n != 1 {
						t.Fatalf("%d requests aborted, want 1", n)
					}
					return
				}
				time.Sleep(time.Nanosecond)
				check("when the prefill step ends", counts{0, 1}, tt.stream)
				<-done
				check("after the answer", counts{0, 1}, true)
			})
		})
	}
}

// TestFirstTokenDelay pins the time to first token on the bubble's clock:
// the prefill steps of the prompt, each costing the mocker's polynomial of
// its tokens (restated here by hand), so a long prompt's first token comes
// clearly later than a short one's. With chunked prefill every chunk pays
// the polynomial's constant again; SpeedupRatio divides everything.
func TestFirstTokenDelay(t *testing.T) {
	ms := func(tokens ...int) time.Duration { // prefill steps of tokens each
		sum := 0.0
		for _, n := range tokens {
			p := float64(n)
			sum += 16.50142 + 0.01518344*p + 4.209989e-07*p*p
		}
		return time.Duration(sum * float64(time.Millisecond))
	}
	decode := func(usage float64) time.Duration {
		return time.Duration((5.74 + 54.01*usage - 25.74*usage*usage) * float64(time.Millisecond))
	}
	chunks := func(prompt, budget int) []int {
		var out []int
		for ; prompt > budget; prompt -= budget {
			out = append(out, budget)
		}
		return append(out, prompt)
	}
	tests := []struct {
		name   string
		opts   Options
		prompt int
		ahead  int // a request of this many prompt tokens submitted first; 0: none
		want   time.Duration
	}{
		{"20 tokens", Options{}, 20, 0, ms(20)},
		{"2000 tokens", Options{}, 2000, 0, ms(2000)},
		{"6000 tokens", Options{}, 6000, 0, ms(6000)},
		{"8000 tokens", Options{}, 8000, 0, ms(8000)},
		// 8192 tokens: the first prompt and 2192 of the second; then the
		// other 3808 with the first one's decode, 751 of 16383 blocks used.
		{"6000 tokens behind another", Options{}, 6000, 6000, ms(8192, 3808) + decode(751.0/16383)},
		{"6000 tokens in chunks of 512", Options{MaxNumBatchedTokens: 512}, 6000, 0, ms(chunks(6000, 512)...)},
		{"6000 tokens in chunks of 256", Options{MaxNumBatchedTokens: 256}, 6000, 0, ms(chunks(6000, 256)...)},
		{"6000 tokens at speedup 10", Options{SpeedupRatio: 10}, 6000, 0, ms(6000) / 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, tt.opts)
				start := time.Now()
				if tt.ahead > 0 {
					submit(t, e, Request{PromptTokens: tt.ahead, MaxTokens: 8, IgnoreEOS: true})
				}
				h := submit(t, e, Request{PromptTokens: tt.prompt, MaxTokens: 8, IgnoreEOS: true})
				runEngine(t, e)
				if p, err := h.Wait(t.Context()); err != nil || p.Tokens != 1 {
					t.Fatalf("first Wait: %+v, %v", p, err)
				}
				ttft := time.Since(start)
				if d := ttft - tt.want; d < -time.Microsecond || d > time.Microsecond {
					t.Fatalf("first token after %v, want %v", ttft, tt.want)
				}
				t.Logf("time to first token: %v", ttft)
			})
		})
	}
	if short, long := ms(20), ms(6000); long < 7*short || long < 100*time.Millisecond {
		t.Errorf("a 6000-token prompt's first token after %v, a 20-token one's after %v", long, short)
	}
}

// Every dialect serves the two gauges at OwnMetricsPath; the Prometheus
// dialects also in /metrics. knownLoad queued 4 requests and gave 2 their
// first token.
func TestBeforeFirstTokenMetrics(t *testing.T) {
	tests := []struct {
		dialect Dialect
		paths   []string
	}{
		{DialectVLLM, []string{OwnMetricsPath, "/metrics"}},
		{DialectSGLang, []string{OwnMetricsPath, "/metrics"}},
		{DialectTRTLLM, []string{OwnMetricsPath}},
	}
	for _, tt := range tests {
		t.Run(string(tt.dialect), func(t *testing.T) {
			e, h := knownLoad(t, tt.dialect)
			if got := engineCounts(e); got != (counts{2, 4}) {
				t.Fatalf("Stats: count %d, max %d; want 2, 4", got.n, got.max)
			}
			for _, path := range tt.paths {
				mfs := scrapePath(t, h, path)
				checkSeries(t, mfs, []wantSeries{
					{MetricBeforeFirstToken, nil, dto.MetricType_GAUGE, 2},
					{MetricBeforeFirstTokenMax, nil, dto.MetricType_GAUGE, 4},
				})
				if path == OwnMetricsPath && len(mfs) != 5 {
					t.Errorf("%s has %d families, want enginesim's 5 only", path, len(mfs))
				}
			}
		})
	}
	f, err := NewFaults(DefaultFaultSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(newOwnCollector(newEngine(t, Options{}), f))
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}
