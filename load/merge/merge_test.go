package merge_test

import (
	"slices"
	"testing"
	"time"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/load/merge"
	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/scrape"
)

func eng(n int64) load.Value    { return load.Value{N: n, Source: load.SourceEngine} }
func static(n int64) load.Value { return load.Value{N: n, Source: load.SourceStatic} }

func ptr[T any](v T) *T { return &v }

func f(n int64, src report.Source) report.Field { return report.Field{N: n, Source: src} }

// sources builds Sources over a fixed engine load and thresholds.
func sources(el scrape.EngineLoad, fl *inflight.Tracker, th busy.Thresholds) merge.Sources {
	return merge.Sources{
		Engine:     func() scrape.EngineLoad { return el },
		Flights:    fl,
		Requests:   func() report.Requests { return report.Requests{InFlight: 2, Queued: 1, Limit: 4, QueueLimit: 16} },
		Thresholds: func() busy.Thresholds { return th },
		Evaluator:  busy.NewEvaluator(),
	}
}

// TestMergeSources: each field comes from where the rules say, and says so.
func TestMergeSources(t *testing.T) {
	at := time.Unix(1700000000, 0)
	el := scrape.EngineLoad{Dialect: scrape.DialectVLLM, At: at, Ranks: []load.Rank{{
		DPRank: 0, KVTotalBlocks: eng(1000), KVUsedBlocks: eng(100), NumRequestsRunning: eng(2),
		NumRequestsWaiting: eng(0), MaxNumBatchedTokens: static(8192), BlockSize: eng(16),
	}}}
	fl := inflight.New(nil)
	fl.Begin(inflight.Unpinned).SetPrompt(160) // 10 blocks, 160 prefill tokens
	s := sources(el, fl, busy.Thresholds{}).Compute()
	if s.Engine.Dialect != "vllm" || !s.Engine.ScrapedAt.Equal(at) || s.Requests.InFlight != 2 || s.Stale || s.Busy {
		t.Errorf("worker fields: %+v", s)
	}
	want := report.Rank{
		DPRank: 0, KVTotalBlocks: f(1000, report.SourceEngine), KVUsedBlocks: f(100, report.SourceEngine),
		ActiveDecodeBlocks: f(10, report.SourceSlotgate), ActivePrefillTokens: f(160, report.SourceSlotgate),
		MaxNumBatchedTokens: f(8192, report.SourceStatic), NumRequestsRunning: f(2, report.SourceEngine),
		NumRequestsWaiting: f(0, report.SourceEngine), BlockSize: f(16, report.SourceEngine),
	}
	if len(s.Ranks) != 1 || s.Ranks[0] != want {
		t.Errorf("ranks = %+v\nwant    %+v", s.Ranks, want)
	}
}

// TestMergeEnginePrefillWinsWhileFresh: SGLang and TensorRT-LLM export
// their prefill backlog; it replaces slotgate's estimate until the engine
// goes stale.
func TestMergeEnginePrefillWinsWhileFresh(t *testing.T) {
	el := scrape.EngineLoad{Dialect: scrape.DialectSGLang, Ranks: []load.Rank{{DPRank: 0, ActivePrefillTokens: eng(500)}}}
	fl := inflight.New(nil)
	fl.Begin(0).SetPrompt(70)
	if got := sources(el, fl, busy.Thresholds{}).Compute().Ranks[0].ActivePrefillTokens; got != f(500, report.SourceEngine) {
		t.Errorf("fresh engine: prefill %+v, want the engine's 500", got)
	}
	el.Stale = true
	if got := sources(el, fl, busy.Thresholds{}).Compute().Ranks[0].ActivePrefillTokens; got != f(70, report.SourceSlotgate) {
		t.Errorf("stale engine: prefill %+v, want slotgate's 70", got)
	}
}

// TestMergeUsedBlocksNeverStatic: an override never fills the engine's
// occupancy, and a value slotgate cannot count stays unknown.
func TestMergeUsedBlocksNeverStatic(t *testing.T) {
	el := scrape.EngineLoad{Ranks: []load.Rank{{DPRank: 0, KVUsedBlocks: static(5), NumRequestsRunning: static(1)}}}
	r := sources(el, inflight.New(nil), busy.Thresholds{}).Compute().Ranks[0]
	if r.KVUsedBlocks.Known() || r.NumRequestsRunning.Known() || r.ActiveDecodeBlocks.Known() {
		t.Errorf("rank = %+v: used and running must be the engine's only, decode blocks unknown without a block size", r)
	}
}

// TestMergeNoEngineRanksIsRankZero: with no engine figures at all there is
// still one rank, carrying slotgate's own view.
func TestMergeNoEngineRanksIsRankZero(t *testing.T) {
	fl := inflight.New(nil)
	fl.Begin(inflight.Unpinned).SetPrompt(9)
	s := sources(scrape.EngineLoad{}, fl, busy.Thresholds{}).Compute()
	if len(s.Ranks) != 1 || s.Ranks[0].DPRank != 0 || s.Ranks[0].ActivePrefillTokens != f(9, report.SourceSlotgate) {
		t.Errorf("ranks = %+v, want rank 0 with 9 prefill tokens", s.Ranks)
	}
}

// TestMergeBusy: the busy rule sees the merged ranks; a stale engine's
// occupancy never decides, slotgate's own does instead.
func TestMergeBusy(t *testing.T) {
	th := busy.Thresholds{ActiveDecodeBlocks: ptr(0.5)}
	el := scrape.EngineLoad{Ranks: []load.Rank{
		{DPRank: 0, KVTotalBlocks: eng(100), KVUsedBlocks: eng(90), BlockSize: eng(16)},
		{DPRank: 1, KVTotalBlocks: eng(100), KVUsedBlocks: eng(60), BlockSize: eng(16)},
	}}
	s := sources(el, inflight.New(nil), th).Compute()
	if !s.Busy || !s.Ranks[0].Busy || !s.Ranks[1].Busy {
		t.Errorf("both ranks over half full: busy %v, ranks %v %v", s.Busy, s.Ranks[0].Busy, s.Ranks[1].Busy)
	}
	if s.Thresholds.ActiveDecodeBlocks == nil || *s.Thresholds.ActiveDecodeBlocks != 0.5 {
		t.Errorf("thresholds not in the snapshot: %+v", s.Thresholds)
	}
	el.Stale = true // slotgate's own count (nothing in flight) decides
	if s := sources(el, inflight.New(nil), th).Compute(); s.Busy {
		t.Error("a stale engine's occupancy made the worker busy")
	}
	el.Stale = false
	el.Ranks[1].KVUsedBlocks = eng(10)
	if s := sources(el, inflight.New(nil), th).Compute(); s.Busy || !s.Ranks[0].Busy || s.Ranks[1].Busy {
		t.Errorf("one rank free: busy %v, ranks %v %v; want not busy, rank 0 busy", s.Busy, s.Ranks[0].Busy, s.Ranks[1].Busy)
	}
}

// TestMergeRequests: the limiters' state is published as it is read, W,
// the requests in prefill and each rank's included, and the snapshot
// keeps a copy of the ranks.
func TestMergeRequests(t *testing.T) {
	ranks := []report.RankRequests{
		{DPRank: 0, InFlight: 2, Queued: 1, Limit: 2, QueueLimit: 8, WaitingLimit: 1, Prefilling: 1},
		{DPRank: 1, InFlight: 1, Limit: 2, QueueLimit: 8, WaitingLimit: 1, Prefilling: 1},
	}
	want := report.Requests{InFlight: 3, Queued: 1, Limit: 4, QueueLimit: 16, WaitingLimit: 2, Prefilling: 2, Ranks: ranks}
	src := sources(scrape.EngineLoad{}, inflight.New(nil), busy.Thresholds{})
	src.Requests = func() report.Requests { return want }
	s := src.Compute()
	got := s.Requests
	if got.InFlight != 3 || got.Queued != 1 || got.Limit != 4 || got.QueueLimit != 16 || got.WaitingLimit != 2 ||
		got.Prefilling != 2 || !slices.Equal(got.Ranks, ranks) {
		t.Fatalf("requests = %+v\nwant       %+v", got, want)
	}
	ranks[0].Prefilling = 0 // the limiters' reader reuses its slice
	if s.Requests.Ranks[0].Prefilling != 1 {
		t.Error("the snapshot's ranks changed with the slice Requests returned")
	}

	src.Requests = func() report.Requests { return report.Requests{InFlight: 1, Limit: 8} }
	if got := src.Compute().Requests; got.Ranks != nil || got.InFlight != 1 || got.Limit != 8 {
		t.Errorf("engine-wide limits: requests = %+v, want no ranks", got)
	}
}
