package sim

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// knownLoad builds a two-rank engine (100 usable blocks of 16 tokens each)
// in a known state, without running its loops:
//
//	rank 0: requests of 40 and 100 prompt tokens admitted in one step
//	        (3 + 7 = 10 blocks), each with its first token;
//	rank 1: requests of 20 and 8 prompt tokens waiting.
func knownLoad(t *testing.T, dialect Dialect) (*Engine, http.Handler) {
	t.Helper()
	e := newEngine(t, Options{
		DataParallelSize: 2, NumGPUBlocks: 101, BlockSize: 16, MaxModelLen: 1600,
		MaxNumSeqs: 4, MaxNumBatchedTokens: 4096, IterationStatsLimit: 5,
	})
	for _, p := range []int{40, 20, 100, 8} { // least loaded: ranks 0, 1, 0, 1
		submit(t, e, Request{PromptTokens: p, MaxTokens: 10, IgnoreEOS: true})
	}
	stepOnce(e.ranks[0])
	h, err := NewHandler(ServerOptions{Engine: e, Model: "m", Dialect: dialect})
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	return e, h
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
	}
	return rec
}

// scrape parses GET /metrics as Prometheus text, with the legacy name
// rules a scraper such as GIE uses (':' is legal there).
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapePath(t, h, "/metrics")
}

// scrapePath parses GET path as scrape does.
func scrapePath(t *testing.T, h http.Handler, path string) map[string]*dto.MetricFamily {
	t.Helper()
	rec := get(t, h, path)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want Prometheus text", ct)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return mfs
}

// series finds the one series of name whose labels include want.
func series(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no metric %s; have %v", name, slices.Sorted(maps.Keys(mfs)))
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return m
		}
	}
	t.Fatalf("no series of %s with labels %v", name, want)
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

type wantSeries struct {
	name   string
	labels map[string]string
	typ    dto.MetricType
	value  float64
}

func checkSeries(t *testing.T, mfs map[string]*dto.MetricFamily, tests []wantSeries) {
	t.Helper()
	for _, w := range tests {
		m := series(t, mfs, w.name, w.labels)
		if typ := mfs[w.name].GetType(); typ != w.typ {
			t.Errorf("%s has type %v, want %v", w.name, typ, w.typ)
		}
		if got := value(m); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
}

func TestVLLMMetrics(t *testing.T) {
	_, h := knownLoad(t, DialectVLLM)
	mfs := scrape(t, h)
	r0 := map[string]string{"engine": "0", "model_name": "m"}
	r1 := map[string]string{"engine": "1", "model_name": "m"}
	gauge, counter := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	checkSeries(t, mfs, []wantSeries{
		{"vllm:num_requests_running", r0, gauge, 2},
		{"vllm:num_requests_running", r1, gauge, 0},
		{"vllm:num_requests_waiting", r0, gauge, 0},
		{"vllm:num_requests_waiting", r1, gauge, 2},
		{"vllm:num_requests_waiting_by_reason", map[string]string{"engine": "1", "reason": "capacity"}, gauge, 2},
		{"vllm:kv_cache_usage_perc", r0, gauge, 0.1},
		{"vllm:kv_cache_usage_perc", r1, gauge, 0},
		{"vllm:prompt_tokens_total", r0, counter, 140},
		{"vllm:prompt_tokens_total", r1, counter, 0},
		{"vllm:generation_tokens_total", r0, counter, 2},
		{"vllm:num_preemptions_total", r0, counter, 0},
		{"vllm:request_success_total", map[string]string{"engine": "0", "finished_reason": "length"}, counter, 0},
		{"vllm:cache_config_info", map[string]string{"engine": "1", "block_size": "16", "num_gpu_blocks": "202"}, gauge, 1},
	})
	for _, m := range mfs["vllm:cache_config_info"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "model_name" {
				t.Error("vllm:cache_config_info has a model_name label; vLLM's has none")
			}
		}
	}
}

func TestSGLangMetrics(t *testing.T) {
	_, h := knownLoad(t, DialectSGLang)
	mfs := scrape(t, h)
	r0 := map[string]string{"dp_rank": "0", "model_name": "m", "engine_type": "unified"}
	r1 := map[string]string{"dp_rank": "1", "model_name": "m"}
	gauge, counter := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	checkSeries(t, mfs, []wantSeries{
		{"sglang:num_running_reqs", r0, gauge, 2},
		{"sglang:num_queue_reqs", r1, gauge, 2},
		{"sglang:num_used_tokens", r0, gauge, 160},
		{"sglang:max_total_num_tokens", r1, gauge, 1600},
		{"sglang:token_usage", r0, gauge, 0.1},
		{"sglang:page_size", r0, gauge, 16},
		{"sglang:num_pages", r0, gauge, 100},
		{"sglang:context_len", r0, gauge, 1600},
		{"sglang:cache_config_info", map[string]string{"dp_rank": "0", "page_size": "16", "num_pages": "100"}, gauge, 1},
		{"sglang:prompt_tokens_total", r0, counter, 140},
		{"sglang:generation_tokens_total", r0, counter, 2},
		{"sglang:gen_throughput", r0, gauge, 2 / StepDuration(140, false, 0, 1).Seconds()},
		{"sglang:gen_throughput", r1, gauge, 0},
	})
	if _, ok := mfs["vllm:num_requests_running"]; ok {
		t.Error("the sglang dialect exports vllm metrics")
	}
}

func TestSGLangLoads(t *testing.T) {
	_, h := knownLoad(t, DialectSGLang)
	var got loadsResponse
	if err := json.Unmarshal(get(t, h, "/v1/loads").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// The last step of rank 0 prefilled 140 tokens and sampled 2.
	throughput := 2 / StepDuration(140, false, 0, 1).Seconds()
	want := []rankLoad{
		{DPRank: 0, NumRunningReqs: 2, NumUsedTokens: 160, NumTotalTokens: 160, MaxTotalNumTokens: 1600, TokenUsage: 0.1,
			GenThroughput: throughput, MaxRunningRequests: 4},
		{DPRank: 1, NumWaitingReqs: 2, NumWaitingUncachedTokens: 28, NumTotalTokens: 28, MaxTotalNumTokens: 1600, MaxRunningRequests: 4},
	}
	if got.DPRankCount != 2 || len(got.Loads) != 2 || got.Loads[0] != want[0] || got.Loads[1] != want[1] {
		t.Fatalf("loads = %+v\nwant %+v", got, want)
	}
	wantAgg := loadsAggregate{TotalRunningReqs: 2, TotalWaitingReqs: 2, TotalReqs: 4, TotalUsedTokens: 160, TotalTokens: 188, AvgTokenUsage: 0.05,
		AvgThroughput: throughput / 2}
	if got.Aggregate != wantAgg {
		t.Errorf("aggregate = %+v, want %+v", got.Aggregate, wantAgg)
	}
	var one loadsResponse
	if err := json.Unmarshal(get(t, h, "/v1/loads?dp_rank=1").Body.Bytes(), &one); err != nil {
		t.Fatal(err)
	}
	if len(one.Loads) != 1 || one.Loads[0] != want[1] || one.DPRankCount != 2 {
		t.Errorf("dp_rank=1: %+v", one)
	}
	for _, bad := range []string{"/v1/loads?dp_rank=2", "/v1/loads?dp_rank=x", "/v1/loads?format=prometheus"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, bad, nil))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, rec.Code)
		}
	}
}

func TestTRTLLMIterationStats(t *testing.T) {
	e, h := knownLoad(t, DialectTRTLLM)
	var got []IterationStats
	if err := json.Unmarshal(get(t, h, "/metrics").Body.Bytes(), &got); err != nil {
		t.Fatalf("decode /metrics: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d iteration records, want 1: %+v", len(got), got)
	}
	it := got[0]
	wantKV := KVCacheStats{MaxNumBlocks: 100, FreeNumBlocks: 90, UsedNumBlocks: 10, TokensPerBlock: 16,
		AllocTotalBlocks: 10, AllocNewBlocks: 10, MissedBlocks: 10}
	wantIB := InflightBatchingStats{NumScheduledRequests: 2, NumContextRequests: 2, NumCtxTokens: 140, NumCtxKvTokens: 140}
	if it.Iter != 0 || it.AttentionDPRank != 0 || it.NumActiveRequests != 2 || it.NumQueuedRequests != 0 ||
		it.MaxNumActiveRequests != 4 || it.MaxNumTokensRuntime != 4096 || it.KVCacheStats != wantKV ||
		it.InflightBatchingStats != wantIB || it.IterLatencyMS < 16 || it.Timestamp == "" {
		t.Fatalf("iteration record %+v", it)
	}
	if again := get(t, h, "/metrics").Body.String(); strings.TrimSpace(again) != "[]" {
		t.Fatalf("a second read returned %s, want [] (drained on read)", again)
	}
	for range 7 {
		stepOnce(e.ranks[0])
	}
	if err := json.Unmarshal(get(t, h, "/metrics").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Iter != 3 || got[4].Iter != 7 {
		t.Fatalf("after 7 more steps with a buffer of 5: %d records, iters %d..%d; want 5, 3..7",
			len(got), got[0].Iter, got[len(got)-1].Iter)
	}
	if got[4].InflightBatchingStats.NumGenRequests != 2 || got[4].InflightBatchingStats.NumContextRequests != 0 {
		t.Errorf("a decode step: %+v", got[4].InflightBatchingStats)
	}
}

// The raw JSON keeps TensorRT-LLM's field names, nested as it nests them.
func TestTRTLLMFieldNames(t *testing.T) {
	_, h := knownLoad(t, DialectTRTLLM)
	var raw []map[string]any
	if err := json.Unmarshal(get(t, h, "/metrics").Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	kv, _ := raw[0]["kvCacheStats"].(map[string]any)
	ib, _ := raw[0]["inflightBatchingStats"].(map[string]any)
	for _, k := range []string{"maxNumBlocks", "freeNumBlocks", "usedNumBlocks", "tokensPerBlock"} {
		if _, ok := kv[k]; !ok {
			t.Errorf("kvCacheStats has no %s: %v", k, kv)
		}
	}
	for _, k := range []string{"numScheduledRequests", "numContextRequests", "numGenRequests", "numCtxTokens", "numQueuedCtxTokens"} {
		if _, ok := ib[k]; !ok {
			t.Errorf("inflightBatchingStats has no %s: %v", k, ib)
		}
	}
	for _, k := range []string{"timestamp", "iter", "iterLatencyMS", "numActiveRequests", "numQueuedRequests", "attentionDpRank"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("no top-level %s", k)
		}
	}
}

// Each dialect serves only its own load endpoints.
func TestDialectRoutes(t *testing.T) {
	tests := []struct {
		dialect     Dialect
		loads       int
		metricsType string
	}{
		{DialectVLLM, http.StatusNotFound, "text/plain"},
		{DialectSGLang, http.StatusOK, "text/plain"},
		{DialectTRTLLM, http.StatusNotFound, "application/json"},
	}
	for _, tt := range tests {
		t.Run(string(tt.dialect), func(t *testing.T) {
			_, h := knownLoad(t, tt.dialect)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/loads", nil))
			if rec.Code != tt.loads {
				t.Errorf("/v1/loads: %d, want %d", rec.Code, tt.loads)
			}
			if ct := get(t, h, "/metrics").Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.metricsType) {
				t.Errorf("/metrics Content-Type %q, want %s", ct, tt.metricsType)
			}
		})
	}
	if _, err := NewHandler(ServerOptions{Engine: newEngine(t, Options{}), Dialect: "xml"}); err == nil {
		t.Error("NewHandler accepted an unknown dialect")
	}
}
