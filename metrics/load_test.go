package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/metrics"
)

func loadRegistry(t *testing.T, snap *report.Snapshot) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg, metrics.Options{
		Limiter: fixed, Outcomes: gate.Outcomes(), Protocols: gate.Protocols(), Load: func() *report.Snapshot { return snap },
	})
	if err != nil {
		t.Fatalf("metrics.New: %v", err)
	}
	return reg
}

// TestLoadGaugesPerRank: one series per rank for each known count, none
// for an unknown one, and busy for every rank.
func TestLoadGaugesPerRank(t *testing.T) {
	eng := func(n int64) report.Field { return report.Field{N: n, Source: report.SourceEngine} }
	own := func(n int64) report.Field { return report.Field{N: n, Source: report.SourceSlotgate} }
	snap := &report.Snapshot{
		Stale:  true,
		Engine: report.Engine{ScrapedAt: time.Unix(1700000000, 500e6), FailedScrapes: 4},
		Ranks: []report.Rank{
			{DPRank: 0, Busy: true, KVTotalBlocks: eng(1000), KVUsedBlocks: eng(900), ActiveDecodeBlocks: own(850),
				ActivePrefillTokens: own(12), MaxNumBatchedTokens: report.Field{N: 8192, Source: report.SourceStatic}},
			{DPRank: 3, KVTotalBlocks: eng(1000), ActivePrefillTokens: own(0)},
		},
	}
	want := `
# HELP slotgate_worker_kv_total_blocks KV cache capacity of the rank in blocks, from the engine or --kv-total-blocks.
# TYPE slotgate_worker_kv_total_blocks gauge
slotgate_worker_kv_total_blocks{dp_rank="0"} 1000
slotgate_worker_kv_total_blocks{dp_rank="3"} 1000
# HELP slotgate_worker_kv_used_blocks KV cache blocks in use on the rank, as the engine reports them.
# TYPE slotgate_worker_kv_used_blocks gauge
slotgate_worker_kv_used_blocks{dp_rank="0"} 900
# HELP slotgate_worker_active_decode_blocks KV blocks the requests slotgate forwarded fill, by slotgate's count of their tokens.
# TYPE slotgate_worker_active_decode_blocks gauge
slotgate_worker_active_decode_blocks{dp_rank="0"} 850
# HELP slotgate_worker_active_prefill_tokens Prompt tokens waiting for their first generated token: the engine's when it exports them, else slotgate's estimate.
# TYPE slotgate_worker_active_prefill_tokens gauge
slotgate_worker_active_prefill_tokens{dp_rank="0"} 12
slotgate_worker_active_prefill_tokens{dp_rank="3"} 0
# HELP slotgate_worker_max_num_batched_tokens Token budget of one engine step on the rank, from the engine or --max-num-batched-tokens.
# TYPE slotgate_worker_max_num_batched_tokens gauge
slotgate_worker_max_num_batched_tokens{dp_rank="0"} 8192
# HELP slotgate_worker_busy 1 while the rank is busy under the busy thresholds (any check true); the worker is busy when every rank is.
# TYPE slotgate_worker_busy gauge
slotgate_worker_busy{dp_rank="0"} 1
slotgate_worker_busy{dp_rank="3"} 0
# HELP slotgate_engine_metrics_stale 1 once the engine's load metrics failed 3 scrapes in a row; its values are then those of the last success.
# TYPE slotgate_engine_metrics_stale gauge
slotgate_engine_metrics_stale 1
# HELP slotgate_engine_metrics_failed_scrapes Consecutive failed scrapes of the engine's load metrics; 0 after a success.
# TYPE slotgate_engine_metrics_failed_scrapes gauge
slotgate_engine_metrics_failed_scrapes 4
# HELP slotgate_engine_metrics_last_success_timestamp_seconds Unix time of the last successful scrape of the engine's load metrics; absent before the first.
# TYPE slotgate_engine_metrics_last_success_timestamp_seconds gauge
slotgate_engine_metrics_last_success_timestamp_seconds 1.7000000005e+09
`
	names := []string{"slotgate_worker_kv_total_blocks", "slotgate_worker_kv_used_blocks", "slotgate_worker_active_decode_blocks",
		"slotgate_worker_active_prefill_tokens", "slotgate_worker_max_num_batched_tokens", "slotgate_worker_busy",
		"slotgate_engine_metrics_stale", "slotgate_engine_metrics_failed_scrapes", "slotgate_engine_metrics_last_success_timestamp_seconds"}
	if err := testutil.GatherAndCompare(loadRegistry(t, snap), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestLoadGaugesLint: the load families pass promlint too.
func TestLoadGaugesLint(t *testing.T) {
	snap := &report.Snapshot{Ranks: []report.Rank{{DPRank: 0, KVTotalBlocks: report.Field{N: 1, Source: report.SourceEngine}}}}
	lint(t, loadRegistry(t, snap))
}

// TestPerClassMetrics: outcomes and queue waits by policy class, every
// series at zero from the start, and each class's queue depth.
func TestPerClassMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	stats := func() limiter.Stats {
		return limiter.Stats{Slots: 1, QueueLen: 4, Waiting: 3, Classes: []limiter.ClassStats{
			{Name: "interactive", Waiting: 1}, {Name: "batch", Waiting: 2}}}
	}
	m, err := metrics.New(reg, metrics.Options{Limiter: stats, Outcomes: gate.Outcomes(), Protocols: gate.Protocols(),
		Classes: []string{"interactive", "batch"}})
	if err != nil {
		t.Fatal(err)
	}
	m.RequestDone(string(gate.AdmittedQueued), "batch", string(gate.ProtocolGRPC))
	m.RequestDone(string(gate.AdmittedQueued), "platinum", string(gate.ProtocolGRPC)) // not configured: dropped
	m.QueueWait("interactive", 0.5)
	want := `
# HELP slotgate_request_queue_class Requests waiting in the queue of each policy class; they add up to dynamo_request_queue.
# TYPE slotgate_request_queue_class gauge
slotgate_request_queue_class{class="batch"} 2
slotgate_request_queue_class{class="interactive"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slotgate_request_queue_class"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "slotgate_requests_total"); n != 2*len(gate.Outcomes())*len(gate.Protocols()) {
		t.Errorf("slotgate_requests_total has %d series, want every outcome of both classes by both protocols", n)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, l := range s.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			if s.Counter != nil {
				got[key] = s.Counter.GetValue()
			}
			if s.Histogram != nil {
				got[key] = float64(s.Histogram.GetSampleCount())
			}
		}
	}
	for key, v := range map[string]float64{
		"slotgate_requests_total,class=batch,outcome=admitted_queued,protocol=grpc":       1,
		"slotgate_requests_total,class=batch,outcome=admitted_queued,protocol=http":       0,
		"slotgate_requests_total,class=interactive,outcome=admitted_queued,protocol=grpc": 0,
		"slotgate_queue_wait_seconds,class=interactive":                                   1,
		"slotgate_queue_wait_seconds,class=batch":                                         0,
	} {
		if got[key] != v {
			t.Errorf("%s = %v, want %v", key, got[key], v)
		}
	}
}
