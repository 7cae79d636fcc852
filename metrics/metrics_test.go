package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/metrics"
)

// fixedStats is a limiter snapshot whose fields all differ, so that a gauge
// reading the wrong field shows.
var fixedStats = limiter.Stats{
	Slots:            4,
	WaitingLimit:     6,
	QueueLen:         8,
	QueueTimeout:     time.Minute,
	Holding:          3,
	Prefilling:       2,
	Waiting:          5,
	AdmittedDirect:   11,
	AdmittedQueued:   13,
	RejectedFull:     7,
	TimedOut:         17,
	CancelledWaiting: 19,
	DequeuedLIFO:     1, // and so 12 taken in FIFO order
}

func newMetrics(t *testing.T, stats func() limiter.Stats) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{
		Limiter:   stats,
		Outcomes:  gate.Outcomes(),
		Protocols: gate.Protocols(),
		Version:   "v",
		Revision:  "r",
	})
	if err != nil {
		t.Fatalf("metrics.New: %v", err)
	}
	return m, reg
}

func fixed() limiter.Stats { return fixedStats }

// TestDynamoMetricsExposition pins Dynamo's three worker admission metrics
// byte for byte: names, help strings, types, and no labels.
func TestDynamoMetricsExposition(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	const want = `
# HELP dynamo_engine_request Current number of requests being handled by the engine (--engine-request-limit)
# TYPE dynamo_engine_request gauge
dynamo_engine_request 3
# HELP dynamo_rejection_request_total Requests rejected because the worker is at capacity (engine in-flight limit and Dynamo queue both full)
# TYPE dynamo_rejection_request_total counter
dynamo_rejection_request_total 7
# HELP dynamo_request_queue Current number of requests queued in Dynamo not yet in the engine (--dynamo-request-queue-limit)
# TYPE dynamo_request_queue gauge
dynamo_request_queue 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"dynamo_engine_request", "dynamo_request_queue", "dynamo_rejection_request_total"); err != nil {
		t.Error(err)
	}
}

func TestLimitGauges(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	const want = `
# HELP slotgate_engine_request_limit N, the engine slots (--engine-request-limit); 0 when no limit is set.
# TYPE slotgate_engine_request_limit gauge
slotgate_engine_request_limit 4
# HELP slotgate_request_queue_limit Q, the places in the overflow queue (DYN_DYNAMO_REQUEST_QUEUE_LIMIT); 0 when no limit is set.
# TYPE slotgate_request_queue_limit gauge
slotgate_request_queue_limit 8
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"slotgate_engine_request_limit", "slotgate_request_queue_limit"); err != nil {
		t.Error(err)
	}
}

func TestUnlimitedLimiterReportsZeroLimits(t *testing.T) {
	l := limiter.NewUnlimited()
	_, reg := newMetrics(t, l.Stats)
	if got := gaugeValue(t, reg, "slotgate_engine_request_limit"); got != 0 {
		t.Errorf("slotgate_engine_request_limit = %v for an unlimited limiter, want 0", got)
	}
	if got := gaugeValue(t, reg, "slotgate_request_queue_limit"); got != 0 {
		t.Errorf("slotgate_request_queue_limit = %v for an unlimited limiter, want 0", got)
	}
}

func TestBuildInfo(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	const want = `
# HELP slotgate_build_info A metric with a constant '1' value labelled by the slotgate version and revision.
# TYPE slotgate_build_info gauge
slotgate_build_info{revision="r",version="v"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slotgate_build_info"); err != nil {
		t.Error(err)
	}
}

// TestLimiterSnapshotPerScrape shows that the limiter is read once per
// scrape, not once per gauge.
func TestLimiterSnapshotPerScrape(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	_, reg := newMetrics(t, func() limiter.Stats {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return fixedStats
	})
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("one scrape read the limiter %d times, want 1", calls)
	}
}

// TestRequestsTotalStartsAtZeroForEveryOutcome: every outcome by every
// protocol, before any request.
func TestRequestsTotalStartsAtZeroForEveryOutcome(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	got := outcomeCounts(t, reg)
	if want := len(gate.Outcomes()) * len(gate.Protocols()); len(got) != want {
		t.Errorf("slotgate_requests_total has %d series, want %d: %v", len(got), want, got)
	}
	for _, o := range gate.Outcomes() {
		for _, p := range gate.Protocols() {
			v, ok := got[o+"/"+p]
			switch {
			case !ok:
				t.Errorf("slotgate_requests_total{outcome=%q,protocol=%q} is missing before any request", o, p)
			case v != 0:
				t.Errorf("slotgate_requests_total{outcome=%q,protocol=%q} = %v before any request, want 0", o, p, v)
			}
		}
	}
}

func TestRequestDoneCountsItsOutcome(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	m.RequestDone(string(gate.AdmittedQueued), metrics.DefaultClass, string(gate.ProtocolHTTP))
	m.RequestDone(string(gate.AdmittedQueued), metrics.DefaultClass, string(gate.ProtocolHTTP))
	m.RequestDone(string(gate.AdmittedQueued), metrics.DefaultClass, string(gate.ProtocolGRPC))
	m.RequestDone(string(gate.RejectedCapacity), metrics.DefaultClass, string(gate.ProtocolGRPC))

	want := map[string]float64{}
	for _, o := range gate.Outcomes() {
		for _, p := range gate.Protocols() {
			want[o+"/"+p] = 0
		}
	}
	want["admitted_queued/http"] = 2
	want["admitted_queued/grpc"] = 1
	want["rejected_capacity/grpc"] = 1
	got := outcomeCounts(t, reg)
	for key, w := range want {
		if got[key] != w {
			t.Errorf("slotgate_requests_total{outcome/protocol=%q} = %v, want %v", key, got[key], w)
		}
	}
}

func TestRequestDoneUnknownLabelsAreDropped(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	before := outcomeCounts(t, reg)
	for _, tc := range []struct{ outcome, protocol string }{
		{"no_such_outcome", "http"},
		{"", "http"},
		{string(gate.Passthrough), "http"},
		{string(gate.AdmittedDirect), ""},
		{string(gate.AdmittedDirect), "websocket"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("RequestDone(%q, %q) panicked: %v", tc.outcome, tc.protocol, r)
				}
			}()
			m.RequestDone(tc.outcome, metrics.DefaultClass, tc.protocol)
		}()
	}
	after := outcomeCounts(t, reg)
	if len(after) != len(before) {
		t.Errorf("unknown labels changed the series: before %v, after %v", before, after)
	}
	for key, v := range after {
		if v != before[key] {
			t.Errorf("slotgate_requests_total{outcome/protocol=%q} went from %v to %v on unknown labels", key, before[key], v)
		}
	}
}

// TestRequestDoneDoesNotAllocate: it runs once per request.
func TestRequestDoneDoesNotAllocate(t *testing.T) {
	m, _ := newMetrics(t, fixed)
	for _, p := range append(gate.Protocols(), "no_such_protocol") {
		if n := testing.AllocsPerRun(100, func() { m.RequestDone(string(gate.AdmittedDirect), metrics.DefaultClass, p) }); n != 0 {
			t.Errorf("RequestDone(%q) allocates %v times per call, want 0", p, n)
		}
	}
}

func BenchmarkRequestDone(b *testing.B) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Limiter: fixed, Outcomes: gate.Outcomes(), Protocols: gate.Protocols(),
		Classes: []string{"interactive", "batch"}})
	if err != nil {
		b.Fatal(err)
	}
	outcomes, protocols := gate.Outcomes(), gate.Protocols()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.RequestDone(outcomes[i%len(outcomes)], "batch", protocols[i%len(protocols)])
			i++
		}
	})
}

func TestHistograms(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	if got := histogram(t, reg, "slotgate_queue_wait_seconds").GetSampleCount(); got != 0 {
		t.Errorf("slotgate_queue_wait_seconds count = %d before any observation, want 0", got)
	}
	m.QueueWait(metrics.DefaultClass, 0)
	m.QueueWait(metrics.DefaultClass, 0.2)
	m.QueueWait(metrics.DefaultClass, 450) // LLM queues are long: this must land in a finite bucket
	m.FirstByte(1.5)

	qw := histogram(t, reg, "slotgate_queue_wait_seconds")
	if got := qw.GetSampleCount(); got != 3 {
		t.Errorf("slotgate_queue_wait_seconds count = %d, want 3", got)
	}
	if got := qw.GetSampleSum(); got != 450.2 {
		t.Errorf("slotgate_queue_wait_seconds sum = %v, want 450.2", got)
	}
	if got := bucketCount(qw, 0.25); got != 2 {
		t.Errorf("slotgate_queue_wait_seconds{le=0.25} = %d, want 2", got)
	}
	if got := bucketCount(qw, 600); got != 3 {
		t.Errorf("slotgate_queue_wait_seconds{le=600} = %d, want 3 (buckets must reach ten minutes)", got)
	}

	fb := histogram(t, reg, "slotgate_time_to_first_byte_seconds")
	if got := fb.GetSampleCount(); got != 1 {
		t.Errorf("slotgate_time_to_first_byte_seconds count = %d, want 1", got)
	}
	if got := fb.GetSampleSum(); got != 1.5 {
		t.Errorf("slotgate_time_to_first_byte_seconds sum = %v, want 1.5", got)
	}
	if n := testutil.CollectAndCount(reg, "slotgate_queue_wait_seconds", "slotgate_time_to_first_byte_seconds"); n != 2 {
		t.Errorf("CollectAndCount = %d series for the two histograms, want 2 (no labels)", n)
	}
}

func TestConcurrentUseAndScrapes(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				m.RequestDone(string(gate.AdmittedDirect), metrics.DefaultClass, string(gate.ProtocolGRPC))
				m.QueueWait(metrics.DefaultClass, 0.001)
				m.FirstByte(0.01)
				m.Received()
				m.Decided(string(gate.AdmittedDirect))
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Errorf("Gather: %v", err)
				return
			}
		}
	})
	wg.Wait()
	if got := outcomeCounts(t, reg)["admitted_direct/grpc"]; got != goroutines*each {
		t.Errorf("admitted_direct = %v, want %d", got, goroutines*each)
	}
	if got := histogram(t, reg, "slotgate_queue_wait_seconds").GetSampleCount(); got != goroutines*each {
		t.Errorf("queue wait count = %d, want %d", got, goroutines*each)
	}
	got := admissionCounts(t, reg)
	for _, key := range []string{"receive", "admit{source=direct}"} {
		if got[key] != goroutines*each {
			t.Errorf("%s = %v, want %d", key, got[key], goroutines*each)
		}
	}
}

func TestLint(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	// Observe something so that every family has samples to lint.
	m.RequestDone(string(gate.AdmittedDirect), metrics.DefaultClass, string(gate.ProtocolHTTP))
	m.QueueWait(metrics.DefaultClass, 0.1)
	m.FirstByte(0.2)
	m.Received()
	m.Decided(string(gate.AdmittedDirect))
	lint(t, reg)
}

func TestRegisterTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := metrics.Options{Limiter: fixed, Outcomes: gate.Outcomes(), Protocols: gate.Protocols(), Version: "v", Revision: "r"}
	if _, err := metrics.New(reg, opts); err != nil {
		t.Fatalf("first New: %v", err)
	}
	_, err := metrics.New(reg, opts)
	if err == nil {
		t.Fatal("second New on the same registry succeeded, want an error")
	}
	if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
		t.Errorf("second New: %v, want it to wrap prometheus.AlreadyRegisteredError", err)
	}
}

func TestNewRequiresLimiterOutcomesAndProtocols(t *testing.T) {
	tests := []struct {
		name string
		opts metrics.Options
	}{
		{"nil limiter", metrics.Options{Outcomes: gate.Outcomes(), Protocols: gate.Protocols()}},
		{"no outcomes", metrics.Options{Limiter: fixed, Protocols: gate.Protocols()}},
		{"no protocols", metrics.Options{Limiter: fixed, Outcomes: gate.Outcomes()}},
		{"zero options", metrics.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg, tt.opts)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			if m != nil {
				t.Errorf("New returned %v with its error, want nil", m)
			}
			mfs, gerr := reg.Gather()
			if gerr != nil {
				t.Fatal(gerr)
			}
			if len(mfs) != 0 {
				t.Errorf("a failed New left %d metric families registered", len(mfs))
			}
		})
	}
}

// TestGaugesFollowLiveLimiter drives a real limiter (N=1, Q=2) and reads the
// Dynamo gauges after each step.
func TestGaugesFollowLiveLimiter(t *testing.T) {
	l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, reg := newMetrics(t, l.Stats)

	check := func(step string, engine, queue, rejected float64) {
		t.Helper()
		const fmtWant = `
# HELP dynamo_engine_request Current number of requests being handled by the engine (--engine-request-limit)
# TYPE dynamo_engine_request gauge
dynamo_engine_request %v
# HELP dynamo_rejection_request_total Requests rejected because the worker is at capacity (engine in-flight limit and Dynamo queue both full)
# TYPE dynamo_rejection_request_total counter
dynamo_rejection_request_total %v
# HELP dynamo_request_queue Current number of requests queued in Dynamo not yet in the engine (--dynamo-request-queue-limit)
# TYPE dynamo_request_queue gauge
dynamo_request_queue %v
# HELP slotgate_engine_request_limit N, the engine slots (--engine-request-limit); 0 when no limit is set.
# TYPE slotgate_engine_request_limit gauge
slotgate_engine_request_limit 1
# HELP slotgate_request_queue_limit Q, the places in the overflow queue (DYN_DYNAMO_REQUEST_QUEUE_LIMIT); 0 when no limit is set.
# TYPE slotgate_request_queue_limit gauge
slotgate_request_queue_limit 2
`
		want := fmt.Sprintf(fmtWant, engine, rejected, queue)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"dynamo_engine_request", "dynamo_request_queue", "dynamo_rejection_request_total",
			"slotgate_engine_request_limit", "slotgate_request_queue_limit"); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}

	check("idle", 0, 0, 0)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("one holder", 1, 0, 0)

	type acquired struct {
		permit *limiter.Permit
		err    error
	}
	results := make(chan acquired, 2)
	for range 2 {
		go func() {
			p, err := l.Acquire(ctx)
			results <- acquired{p, err}
		}()
	}
	waitFor(t, "two waiters", func() bool { return l.Stats().Waiting == 2 })
	check("one holder, two waiters", 1, 2, 0)

	// Bounded, so that a limiter that queues instead of refusing fails here.
	fullCtx, fullCancel := context.WithTimeout(ctx, 5*time.Second)
	defer fullCancel()
	if _, err := l.Acquire(fullCtx); !errors.Is(err, limiter.ErrQueueFull) {
		t.Fatalf("Acquire with N+Q taken: %v, want ErrQueueFull", err)
	}
	check("after a rejection", 1, 2, 1)

	// A broken hand-over must fail the test, not hang it.
	next := func(step string) acquired {
		t.Helper()
		select {
		case a := <-results:
			return a
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no waiter was granted the slot within 5s", step)
			return acquired{}
		}
	}

	held.Release() // hands the slot to the oldest waiter
	first := next("first hand-over")
	if first.err != nil {
		t.Fatalf("first waiter: %v", first.err)
	}
	check("after hand-over", 1, 1, 1)

	first.permit.Release()
	second := next("second hand-over")
	if second.err != nil {
		t.Fatalf("second waiter: %v", second.err)
	}
	check("after second hand-over", 1, 0, 1)

	second.permit.Release()
	check("idle again", 0, 0, 1)
}

func TestHandlerServesTextFormat(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	m.RequestDone(string(gate.EngineError), metrics.DefaultClass, string(gate.ProtocolGRPC))
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200; body:\n%s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	for _, want := range []string{
		"# HELP dynamo_engine_request Current number of requests being handled by the engine (--engine-request-limit)\n",
		"# TYPE dynamo_engine_request gauge\n",
		"\ndynamo_engine_request 3\n",
		"\ndynamo_request_queue 5\n",
		"# TYPE dynamo_rejection_request_total counter\n",
		"\ndynamo_rejection_request_total 7\n",
		"# HELP slotgate_requests_total Requests that went through admission, by how they ended, their policy class and the protocol they came by (http, grpc).\n",
		"\nslotgate_requests_total{class=\"default\",outcome=\"engine_error\",protocol=\"grpc\"} 1\n",
		"\nslotgate_requests_total{class=\"default\",outcome=\"engine_error\",protocol=\"http\"} 0\n",
		"\nslotgate_requests_total{class=\"default\",outcome=\"admitted_direct\",protocol=\"http\"} 0\n",
		"\nslotgate_build_info{revision=\"r\",version=\"v\"} 1\n",
		"\ngo_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body lacks %q", want)
		}
	}
}

func TestHandlerNegotiatesOpenMetrics(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("Content-Type %q, want OpenMetrics", ct)
	}
	if !strings.HasSuffix(string(body), "# EOF\n") {
		t.Errorf("OpenMetrics body does not end with # EOF")
	}
	// The sample name a scraper stores is the same in both formats (the
	// OpenMetrics family is named without _total, and values are floats).
	if !strings.Contains(string(body), "\ndynamo_rejection_request_total 7.0\n") {
		t.Errorf("OpenMetrics body lacks dynamo_rejection_request_total 7.0:\n%s", body)
	}
}

// Helpers.

func gather(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name })
	if i < 0 {
		t.Fatalf("no metric family %s", name)
	}
	return mfs[i]
}

func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mf := gather(t, reg, name)
	if len(mf.GetMetric()) != 1 {
		t.Fatalf("%s has %d series, want 1", name, len(mf.GetMetric()))
	}
	return mf.GetMetric()[0].GetGauge().GetValue()
}

func histogram(t *testing.T, reg prometheus.Gatherer, name string) *dto.Histogram {
	t.Helper()
	mf := gather(t, reg, name)
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s is a %v, want a histogram", name, mf.GetType())
	}
	if len(mf.GetMetric()) != 1 {
		t.Fatalf("%s has %d series, want 1", name, len(mf.GetMetric()))
	}
	return mf.GetMetric()[0].GetHistogram()
}

func bucketCount(h *dto.Histogram, le float64) uint64 {
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	return 1<<64 - 1
}

// outcomeCounts returns the class=default series of
// slotgate_requests_total by "outcome/protocol".
func outcomeCounts(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mf := gather(t, reg, "slotgate_requests_total")
	if mf.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("slotgate_requests_total is a %v, want a counter", mf.GetType())
	}
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		l := m.GetLabel() // sorted by name
		if len(l) != 3 || l[0].GetName() != "class" || l[0].GetValue() != metrics.DefaultClass ||
			l[1].GetName() != "outcome" || l[2].GetName() != "protocol" {
			t.Fatalf("slotgate_requests_total series with labels %v, want class=default, outcome and protocol", l)
		}
		out[l[1].GetValue()+"/"+l[2].GetValue()] = m.GetCounter().GetValue()
	}
	return out
}

// waitFor polls cond until it holds or five seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: 5 * time.Second, Every: time.Millisecond}.True(t, what, cond)
}

// TestReadiness: slotgate_ready and slotgate_draining follow what /readyz
// and the drain say, at each scrape.
func TestReadiness(t *testing.T) {
	var notReady error
	draining := false
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Readiness(func() error { return notReady }, func() bool { return draining }))
	for _, tc := range []struct {
		notReady        error
		draining        bool
		ready, drainVal int
	}{
		{nil, false, 1, 0},
		{errors.New("engine: health 503"), false, 0, 0},
		{errors.New("draining"), true, 0, 1},
	} {
		notReady, draining = tc.notReady, tc.draining
		want := fmt.Sprintf(`# HELP slotgate_draining 1 from the moment a drain began (SIGTERM, POST /drain), else 0.
# TYPE slotgate_draining gauge
slotgate_draining %d
# HELP slotgate_ready 1 while /readyz answers 200: the engine answered its health path recently and slotgate is not draining; else 0.
# TYPE slotgate_ready gauge
slotgate_ready %d
`, tc.drainVal, tc.ready)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Errorf("not ready %v, draining %v: %v", tc.notReady, tc.draining, err)
		}
	}
}

func TestRelay(t *testing.T) {
	open, added, idle := 0, uint64(0), 0
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Relay(func() int { return open }, func() uint64 { return added }, func() int { return idle }))
	for _, tc := range []struct {
		open  int
		added uint64
		idle  int
	}{{0, 0, 0}, {3, 7, 2}, {0, 12, 5}} {
		open, added, idle = tc.open, tc.added, tc.idle
		want := fmt.Sprintf(`# HELP slotgate_relay_idle_connections Client connections the relay keeps between requests, after their stream ended or a run of refusals, until a request it does not answer, a hang-up or the idle timeout (--stream-relay epoll).
# TYPE slotgate_relay_idle_connections gauge
slotgate_relay_idle_connections %d
# HELP slotgate_relay_streams Streamed answers the relay's event loops carry now (--stream-relay epoll).
# TYPE slotgate_relay_streams gauge
slotgate_relay_streams %d
# HELP slotgate_relay_streams_total Streamed answers handed to the relay's event loops since start (--stream-relay epoll).
# TYPE slotgate_relay_streams_total counter
slotgate_relay_streams_total %d
`, tc.idle, tc.open, tc.added)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Errorf("open %d, added %d: %v", tc.open, tc.added, err)
		}
	}
}
