package loadgen_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// TestStreamMeasures reads a real stream, served with gaps between chunks:
// one TTFT per request, chunks-1 inter-token gaps, output tokens from the
// usage chunk (which says more than the chunks, as with speculative
// decoding), prompt tokens from usage.
func TestStreamMeasures(t *testing.T) {
	checkLeaks(t)
	for _, endpoint := range []string{loadgen.EndpointCompletions, loadgen.EndpointChat} {
		t.Run(endpoint, func(t *testing.T) {
			e := &engine{chunks: 5, gap: 2 * time.Millisecond, completionTokens: 9}
			srv := e.start(t)
			o := options(srv.URL)
			o.Endpoint, o.Concurrency, o.Requests = endpoint, 1, 3
			r := runLoad(t, t.Context(), o)
			if r.OK != 3 || r.ByStatus["200"] != 3 {
				t.Fatalf("ok = %d, by_status = %v; want 3 successes", r.OK, r.ByStatus)
			}
			if r.TTFT.Count != 3 || r.E2E.Count != 3 {
				t.Errorf("ttft count = %d, e2e count = %d; want 3, 3", r.TTFT.Count, r.E2E.Count)
			}
			if r.ITL.Count != 3*(5-1) {
				t.Errorf("itl count = %d, want %d (chunks-1 per request)", r.ITL.Count, 3*(5-1))
			}
			if r.TTFT.Max > r.E2E.Max || r.TTFT.Min > r.E2E.Min || r.TTFT.Min <= 0 {
				t.Errorf("ttft %+v not within e2e %+v", r.TTFT, r.E2E)
			}
			// Each request's gaps fit between its first token and its end.
			if sumITL := r.ITL.Mean * float64(r.ITL.Count); sumITL > 3*r.E2E.Max+1e-6 {
				t.Errorf("sum of itl %.6fs exceeds 3 × max e2e %.6fs", sumITL, r.E2E.Max)
			}
			if r.OutputTokens != 3*9 || r.PromptTokens != 3*10 {
				t.Errorf("output, prompt tokens = %d, %d; want %d (usage), %d", r.OutputTokens, r.PromptTokens, 3*9, 3*10)
			}
			for _, req := range e.recorded() {
				if req.path != endpoint || req.Model != "sim-model" || !req.Stream || !req.IgnoreEOS ||
					req.StreamOptions == nil || !req.StreamOptions.IncludeUsage || req.MaxTokens != 4 {
					t.Errorf("engine got %+v on %s", req, req.path)
				}
			}
		})
	}
}

// TestResponseShapes covers both endpoints with and without streaming, and
// a stream without usage (output tokens are then the text chunks).
func TestResponseShapes(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name     string
		endpoint string
		stream   bool
		raw      string
		wantOut  int64 // per request
		wantITL  int   // per request
	}{
		{"completions stream", loadgen.EndpointCompletions, true, "", 4, 3},
		{"chat stream", loadgen.EndpointChat, true, "", 4, 3},
		{"completions whole", loadgen.EndpointCompletions, false, "", 4, 0},
		{"chat whole", loadgen.EndpointChat, false, "", 4, 0},
		{"stream without usage", loadgen.EndpointCompletions, true,
			"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &engine{raw: tc.raw}
			srv := e.start(t)
			o := options(srv.URL)
			o.Endpoint, o.Stream, o.Requests = tc.endpoint, tc.stream, 2
			r := runLoad(t, t.Context(), o)
			if r.OK != 2 || r.TTFT.Count != 2 {
				t.Fatalf("ok = %d, ttft count = %d, by_status = %v; want 2, 2", r.OK, r.TTFT.Count, r.ByStatus)
			}
			if r.OutputTokens != 2*tc.wantOut || r.ITL.Count != 2*tc.wantITL {
				t.Errorf("output tokens = %d, itl count = %d; want %d, %d", r.OutputTokens, r.ITL.Count, 2*tc.wantOut, 2*tc.wantITL)
			}
			if !tc.stream && r.TTFT != r.E2E {
				t.Errorf("without streaming ttft %+v should equal e2e %+v", r.TTFT, r.E2E)
			}
			for _, req := range e.recorded() {
				if req.Stream != tc.stream || (req.StreamOptions != nil) != tc.stream {
					t.Errorf("stream = %v, stream_options = %v; want both only when streaming", req.Stream, req.StreamOptions)
				}
			}
		})
	}
}

// TestByStatus: a server that refuses every other request with 529 gives
// half 200 and half 529, and sent is their sum.
func TestByStatus(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name   string
		status func(n int64) int
		want   map[string]int64
	}{
		{"half 529", func(n int64) int { return []int{200, 529}[n%2] }, map[string]int64{"200": 10, "529": 10}},
		{"all 503", func(int64) int { return 503 }, map[string]int64{"503": 20}},
		{"429 then 200", func(n int64) int { return map[bool]int{true: 429, false: 200}[n < 5] }, map[string]int64{"200": 15, "429": 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := (&engine{status: tc.status}).start(t)
			o := options(srv.URL)
			o.Concurrency, o.Requests = 4, 20
			r := runLoad(t, t.Context(), o)
			if !maps.Equal(r.ByStatus, tc.want) || r.Sent != 20 {
				t.Errorf("sent = %d, by_status = %v; want 20, %v", r.Sent, r.ByStatus, tc.want)
			}
			if r.OK != tc.want["200"] || r.TTFT.Count != int(tc.want["200"]) {
				t.Errorf("ok = %d, ttft count = %d; want %d", r.OK, r.TTFT.Count, tc.want["200"])
			}
		})
	}
}

// TestFailures covers the outcomes that are not an HTTP status.
func TestFailures(t *testing.T) {
	checkLeaks(t)
	closed := (&engine{}).start(t)
	closed.Close() // nothing listens there any more
	for _, tc := range []struct {
		name  string
		e     *engine
		url   string
		setup func(*loadgen.Options)
		want  string
	}{
		{"connection refused", nil, closed.URL, nil, loadgen.OutcomeError},
		{"timeout", &engine{block: true}, "", func(o *loadgen.Options) { o.Timeout = 20 * time.Millisecond }, loadgen.OutcomeTimeout},
		{"cancelled at the drain timeout", &engine{block: true}, "", func(o *loadgen.Options) { o.Concurrency, o.DrainTimeout = 4, 0 }, loadgen.OutcomeCancelled},
		{"error event", &engine{raw: "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n"}, "", nil, loadgen.OutcomeStreamError},
		{"not json", &engine{raw: "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {oops\n\n"}, "", nil, loadgen.OutcomeBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if tc.e != nil {
				url = tc.e.start(t).URL
			}
			o := options(url)
			if tc.setup != nil {
				tc.setup(&o)
			}
			r := runLoad(t, t.Context(), o)
			if want := map[string]int64{tc.want: 4}; !maps.Equal(r.ByStatus, want) {
				t.Errorf("by_status = %v, want %v", r.ByStatus, want)
			}
			if r.OK != 0 || r.TTFT.Count != 0 || r.ITL.Count != 0 {
				t.Errorf("ok = %d, ttft %d, itl %d samples; failures must give none", r.OK, r.TTFT.Count, r.ITL.Count)
			}
		})
	}
}

// TestClosedLoopConcurrency: the server never sees more than --concurrency
// requests at once, and does see that many (the first ones are held until
// they are all in flight).
func TestClosedLoopConcurrency(t *testing.T) {
	checkLeaks(t)
	for _, c := range []int{1, 3, 8} {
		t.Run("", func(t *testing.T) {
			e := &engine{gateAt: int64(c), gap: time.Millisecond}
			srv := e.start(t)
			o := options(srv.URL)
			o.Concurrency, o.Requests = c, int64(4*c)
			r := runLoad(t, t.Context(), o)
			if got := e.maxInFlight.Load(); got != int64(c) {
				t.Errorf("concurrency %d: server saw at most %d in flight, want exactly %d", c, got, c)
			}
			if r.MaxConcurrencyObserved != int64(c) || r.Sent != int64(4*c) || r.OK != int64(4*c) {
				t.Errorf("max concurrency observed = %d, sent = %d, ok = %d; want %d, %d, %d",
					r.MaxConcurrencyObserved, r.Sent, r.OK, c, 4*c, 4*c)
			}
		})
	}
}

// TestOpenLoop: Poisson arrivals send exactly the requested count.
func TestOpenLoop(t *testing.T) {
	checkLeaks(t)
	e := &engine{}
	srv := e.start(t)
	o := options(srv.URL)
	o.Mode, o.Rate, o.MaxOutstanding, o.Requests, o.Seed = loadgen.Open, 2000, 1000, 50, 42
	r := runLoad(t, t.Context(), o)
	if r.Sent != 50 || r.Dropped != 0 || r.ByStatus["200"] != 50 || e.n.Load() != 50 {
		t.Errorf("sent = %d, dropped = %d, by_status = %v, engine saw %d; want 50 sent, none dropped",
			r.Sent, r.Dropped, r.ByStatus, e.n.Load())
	}
	if r.Config.Mode != loadgen.Open || r.Config.Rate != 2000 || r.Config.Concurrency != 0 {
		t.Errorf("config = %+v", r.Config)
	}
}

// TestOpenLoopDrops: with every request held, only MaxOutstanding are sent
// and every other arrival is dropped; the held ones are cancelled at the
// drain timeout.
func TestOpenLoopDrops(t *testing.T) {
	checkLeaks(t)
	srv := (&engine{block: true}).start(t)
	o := options(srv.URL)
	o.Mode, o.Rate, o.MaxOutstanding, o.Requests, o.DrainTimeout = loadgen.Open, loadgen.MaxRate, 2, 20, time.Millisecond
	r := runLoad(t, t.Context(), o)
	if r.Sent != 2 || r.Dropped != 18 || r.ByStatus[loadgen.OutcomeCancelled] != 2 || r.MaxConcurrencyObserved != 2 {
		t.Errorf("sent = %d, dropped = %d, by_status = %v, max in flight %d; want 2, 18, 2 cancelled, 2",
			r.Sent, r.Dropped, r.ByStatus, r.MaxConcurrencyObserved)
	}
}

// TestDurationStopsRun: with no count, --duration alone ends the run, in
// both modes.
func TestDurationStopsRun(t *testing.T) {
	checkLeaks(t)
	srv := (&engine{}).start(t)
	for _, mode := range []loadgen.Mode{loadgen.Closed, loadgen.Open} {
		t.Run(string(mode), func(t *testing.T) {
			o := options(srv.URL)
			o.Mode, o.Rate, o.MaxOutstanding = mode, 500, 100
			o.Requests, o.Duration = 0, 50*time.Millisecond
			r := runLoad(t, t.Context(), o)
			if r.Sent < 1 || r.OK != r.Sent || r.Interrupted {
				t.Errorf("sent = %d, ok = %d, interrupted = %v; want some, all ok, not interrupted", r.Sent, r.OK, r.Interrupted)
			}
		})
	}
}

// TestInterrupted: the caller's context ends issuing; in-flight requests
// drain, then are cancelled.
func TestInterrupted(t *testing.T) {
	checkLeaks(t)
	e := &engine{block: true, arrived: make(chan struct{}, 3)}
	srv := e.start(t)
	o := options(srv.URL)
	o.Concurrency, o.Requests, o.Duration, o.DrainTimeout = 3, 0, time.Hour, time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range 3 {
			<-e.arrived
		}
		cancel()
	}()
	r := runLoad(t, ctx, o)
	if !r.Interrupted || r.Sent != 3 || r.ByStatus[loadgen.OutcomeCancelled] != 3 {
		t.Errorf("interrupted = %v, sent = %d, by_status = %v; want true, 3, 3 cancelled", r.Interrupted, r.Sent, r.ByStatus)
	}
}

// TestSeedFixesRequests: one seed sends the same prompts and lengths
// whatever the schedule; another seed sends others.
func TestSeedFixesRequests(t *testing.T) {
	checkLeaks(t)
	run := func(seed uint64) []string {
		e := &engine{}
		srv := e.start(t)
		o := options(srv.URL)
		o.Concurrency, o.Requests, o.Seed = 4, 24, seed
		o.PromptTokens, _ = loadgen.ParseDist("uniform:1:40")
		o.MaxTokens, _ = loadgen.ParseDist("normal:8:3")
		runLoad(t, t.Context(), o)
		var got []string
		for _, req := range e.recorded() {
			if n := len(req.promptText()); n < 3 || n > 4*40 {
				t.Errorf("prompt of %d characters for uniform:1:40 tokens", n)
			}
			got = append(got, req.promptText()+"|"+strconv.Itoa(req.MaxTokens))
		}
		slices.Sort(got)
		return got
	}
	a, b, c := run(7), run(7), run(8)
	if len(a) != 24 || !slices.Equal(a, b) {
		t.Errorf("seed 7 twice sent different requests:\n%q\n%q", a, b)
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 sent the same requests")
	}
}

// TestNewRejects checks that New refuses unusable options.
func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*loadgen.Options)
	}{
		{"no bound", func(o *loadgen.Options) { o.Requests, o.Duration = 0, 0 }},
		{"zero concurrency", func(o *loadgen.Options) { o.Concurrency = 0 }},
		{"open without rate", func(o *loadgen.Options) { o.Mode, o.MaxOutstanding = loadgen.Open, 1 }},
		{"open without max outstanding", func(o *loadgen.Options) { o.Mode, o.Rate = loadgen.Open, 1 }},
		{"unknown mode", func(o *loadgen.Options) { o.Mode = "half-open" }},
		{"bad url", func(o *loadgen.Options) { o.URL = "ftp://x" }},
		{"url with query", func(o *loadgen.Options) { o.URL = "http://x/?a=b" }},
		{"bad endpoint", func(o *loadgen.Options) { o.Endpoint = "/v1/embeddings" }},
		{"no model", func(o *loadgen.Options) { o.Model = " " }},
		{"zero dist", func(o *loadgen.Options) { o.MaxTokens = loadgen.Dist{} }},
		{"negative timeout", func(o *loadgen.Options) { o.Timeout = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options("http://127.0.0.1:1")
			tc.setup(&o)
			if _, err := loadgen.New(o); err == nil {
				t.Errorf("New accepted %+v", o)
			}
		})
	}
	if _, err := loadgen.New(options("http://127.0.0.1:1")); err != nil {
		t.Errorf("New refused working options: %v", err)
	}
}

// TestTarget joins the base URL and the endpoint.
func TestTarget(t *testing.T) {
	for base, want := range map[string]string{
		"http://h:1":        "http://h:1/v1/completions",
		"http://h:1/":       "http://h:1/v1/completions",
		"https://h/prefix/": "https://h/prefix/v1/completions",
	} {
		g, err := loadgen.New(options(base))
		if err != nil {
			t.Fatalf("New(%q): %v", base, err)
		}
		if got := g.Target(); got != want {
			t.Errorf("Target for %q = %q, want %q", base, got, want)
		}
	}
}
