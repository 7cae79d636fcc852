package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// pickerSpec is one metric spec of an endpoint picker's engineConfigs
// entry ("name{label=value}") and the rule Gateway API Inference
// Extension's and llm-d's core-metrics-extractor apply to it
// (pkg/epp/framework/plugins/datalayer/extractor/metrics/spec.go): the
// family by exact name; of its series, those carrying every spec label;
// of those, the one with the latest timestamp, which for an exposition
// without timestamps is the first; its gauge (or counter) value.
type pickerSpec struct {
	name   string
	labels map[string]string
}

func (s pickerSpec) value(t *testing.T, fams map[string]*dto.MetricFamily) float64 {
	t.Helper()
	fam := fams[s.name]
	if fam == nil || len(fam.GetMetric()) == 0 {
		t.Fatalf("metric family %q not found", s.name)
	}
	var latest *dto.Metric
	var recent int64 = -1
	for _, m := range fam.GetMetric() {
		if hasAll(m, s.labels) && m.GetTimestampMs() > recent {
			latest, recent = m, m.GetTimestampMs()
		}
	}
	if latest == nil {
		t.Fatalf("no series of %q with labels %v", s.name, s.labels)
	}
	if g := latest.GetGauge(); g != nil {
		return g.GetValue()
	}
	return latest.GetCounter().GetValue()
}

func hasAll(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}

// The picker's built-in vllm engine config, and slotgate's own.
var (
	vllmQueued  = pickerSpec{name: "vllm:num_requests_waiting"}
	vllmRunning = pickerSpec{name: "vllm:num_requests_running"}
	vllmKV      = pickerSpec{name: "vllm:kv_cache_usage_perc"}
	podQueued   = pickerSpec{name: "slotgate_pod_waiting_requests"}
)

// pickerScrape GETs url as the picker's metrics-data-source does and
// parses it with expfmt's text parser under legacy name validation.
func pickerScrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s as the picker does: %v", url, err)
	}
	return fams
}

// pickerView is what the picker reads of one scrape.
type pickerView struct{ waiting, running, kv float64 }

func viewOf(t *testing.T, fams map[string]*dto.MetricFamily) pickerView {
	return pickerView{vllmQueued.value(t, fams), vllmRunning.value(t, fams), vllmKV.value(t, fams)}
}

// occupy takes N=2 slots with long streams and queues Q=3 more behind
// them; it returns once slotgate holds them all, and ends them when the
// test ends.
func occupy(t *testing.T, sg *sidecar) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 5 {
		wg.Go(func() { streamCompletion(ctx, sg.proxy, "req-"+strconv.Itoa(i), `"hi"`, 8000) })
	}
	eventually(t, "2 admitted and 3 queued", func() bool {
		return sg.metric("dynamo_engine_request") == 2 && sg.metric("dynamo_request_queue") == 3
	})
}

// TestEngineMetricsOnProxyPort: with N slots taken and Q requests queued,
// the picker reading the proxy port's /metrics sees the engine's waiting
// plus slotgate's queue, and running and KV usage as the engine has them;
// slotgate's pod gauge carries the same total.
func TestEngineMetricsOnProxyPort(t *testing.T) {
	eng := startEnginesim(t, enginesimSlow...)
	sg := start(t, eng, nil, "--engine-request-limit", "2", "--request-queue-limit", "3", "--engine-metrics-dialect", "vllm")
	occupy(t, sg)
	var last, engine pickerView
	eventually(t, "the picker's view = the engine's + slotgate's queue", func() bool {
		served := pickerScrape(t, sg.proxy+"/metrics")
		last, engine = viewOf(t, served), viewOf(t, pickerScrape(t, eng+"/metrics"))
		pod := podQueued.value(t, served)
		return engine.running == 2 && last == pickerView{engine.waiting + 3, engine.running, engine.kv} && pod == engine.waiting+3
	})
	if last.kv <= 0 {
		t.Errorf("KV usage %v with 2 requests running, want > 0", last.kv)
	}
	if n := sg.metric("dynamo_engine_request"); n != 2 {
		t.Errorf("dynamo_engine_request = %v after scraping /metrics, want 2: /metrics must take no slot", n)
	}
}

// TestEngineMetricsPassThroughWhenOff: with --serve-engine-metrics=false
// /metrics is the engine's own, unchanged: slotgate's queue is invisible.
func TestEngineMetricsPassThroughWhenOff(t *testing.T) {
	eng := startEnginesim(t, enginesimSlow...)
	sg := start(t, eng, nil, "--engine-request-limit", "2", "--request-queue-limit", "3", "--serve-engine-metrics=false")
	occupy(t, sg)
	eventually(t, "the engine's own figures through the proxy", func() bool {
		served := pickerScrape(t, sg.proxy+"/metrics")
		engine := viewOf(t, pickerScrape(t, eng+"/metrics"))
		if served["slotgate_pod_waiting_requests"] != nil {
			t.Fatal("slotgate's pod gauges served with --serve-engine-metrics=false")
		}
		return engine.running == 2 && viewOf(t, served) == engine
	})
}

// TestEngineMetricsUnavailable: an engine that was never scraped gets a
// 503 naming why, never figures; the engine is not asked per request.
func TestEngineMetricsUnavailable(t *testing.T) {
	var hits sync.Mutex
	n := 0
	srv := newBrokenMetricsEngine(t, func() { hits.Lock(); n++; hits.Unlock() })
	sg := start(t, srv, nil, "--engine-metrics-dialect", "vllm", "--engine-metrics-interval", "1h")
	status, body := get(t, sg.proxy+"/metrics")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "engine metrics unavailable") {
		t.Fatalf("GET /metrics = %d %q, want 503 saying why", status, body)
	}
	// The scraper's first scrape, at start, may still be on its way: wait
	// for it, so that only the GETs below can ask the engine again.
	asked := func() int { hits.Lock(); defer hits.Unlock(); return n }
	eventually(t, "the scraper's first scrape", func() bool { return asked() >= 1 })
	before := asked()
	for range 5 {
		get(t, sg.proxy+"/metrics")
	}
	hits.Lock()
	defer hits.Unlock()
	if n != before {
		t.Errorf("the engine's /metrics was asked %d times by 5 GETs on the proxy port, want 0", n-before)
	}
}

// newBrokenMetricsEngine is an engine whose /metrics always fails (500) and
// counts its calls; /health answers 200.
func newBrokenMetricsEngine(t *testing.T, hit func()) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		hit()
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
