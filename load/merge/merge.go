package merge

import (
	"slices"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/scrape"
)

// Sources are what a Snapshot is computed from. Compute is meant for
// HubOptions.Compute: it must be called from one goroutine at a time,
// since the Evaluator keeps state between calls.
type Sources struct {
	// Engine returns the engine's latest scraped load. Required.
	Engine func() scrape.EngineLoad
	// Flights is slotgate's view of its requests in flight. Required.
	Flights *inflight.Tracker
	// Requests returns the limiters' state: the engine's totals, and each
	// rank's when each rank has limits of its own. Required. The snapshot
	// keeps a copy of its Ranks.
	Requests func() report.Requests
	// Thresholds returns the busy thresholds in force. Required.
	Thresholds func() busy.Thresholds
	// Evaluator applies the busy rule. Required.
	Evaluator *busy.Evaluator
}

// Compute merges the sources into a Snapshot (Seq and At unset).
func (s Sources) Compute() report.Snapshot {
	eng := s.Engine()
	th := s.Thresholds()
	reqs := s.Requests()
	// A copy: a published snapshot is shared, and must not change when the
	// caller reuses its slice.
	reqs.Ranks = slices.Clone(reqs.Ranks)
	snap := report.Snapshot{
		Stale: eng.Stale,
		Engine: report.Engine{
			Dialect: string(eng.Dialect), ScrapedAt: eng.At, FailedScrapes: eng.FailedScrapes, Error: eng.Err,
		},
		Requests:   reqs,
		Thresholds: report.Thresholds(th),
	}
	ranks := mergeRanks(eng, s.Flights)
	res := s.Evaluator.Evaluate(th, busyView(ranks, eng.Stale))
	snap.Busy = res.Busy
	snap.Ranks = make([]report.Rank, len(ranks))
	for i := range ranks {
		snap.Ranks[i] = wireRank(&ranks[i], res.Ranks[i])
	}
	return snap
}

// mergeRanks returns one Rank per engine rank (rank 0 alone when the
// engine reports none), the engine's and static values with slotgate's
// view of its flights.
func mergeRanks(eng scrape.EngineLoad, flights *inflight.Tracker) []load.Rank {
	engRanks := eng.Ranks
	if len(engRanks) == 0 {
		engRanks = []load.Rank{{DPRank: 0}}
	}
	ids := make([]int, len(engRanks))
	blockSize := 0
	for i := range engRanks {
		ids[i] = engRanks[i].DPRank
		if n, ok := engRanks[i].BlockSize.Get(); ok && blockSize == 0 {
			blockSize = int(n)
		}
	}
	own := flights.View(ids, blockSize)
	out := make([]load.Rank, len(engRanks))
	for i := range engRanks {
		out[i] = mergeRank(&engRanks[i], &own[i], eng.Stale)
	}
	return out
}

// mergeRank takes from the engine's rank er what the engine or a static
// override may say, what only the engine may say, and the rest from
// slotgate's own view (whose ActiveDecodeBlocks is unknown without a
// block size).
func mergeRank(er, own *load.Rank, stale bool) load.Rank {
	r := load.Rank{
		DPRank:              er.DPRank,
		KVTotalBlocks:       engineOrStatic(er.KVTotalBlocks),
		KVUsedBlocks:        engineOnly(er.KVUsedBlocks),
		ActiveDecodeBlocks:  own.ActiveDecodeBlocks,
		ActivePrefillTokens: own.ActivePrefillTokens,
		MaxNumBatchedTokens: engineOrStatic(er.MaxNumBatchedTokens),
		NumRequestsRunning:  engineOnly(er.NumRequestsRunning),
		NumRequestsWaiting:  engineOnly(er.NumRequestsWaiting),
		BlockSize:           engineOrStatic(er.BlockSize),
		Flights:             own.Flights,
	}
	// The engine knows its own prefill backlog better than slotgate's
	// estimate, but only while its figures are fresh.
	if p := engineOnly(er.ActivePrefillTokens); p.Known() && !stale {
		r.ActivePrefillTokens = p
	}
	return r
}

// engineOrStatic keeps a scraped value, the engine's or a static
// override; anything else is unknown.
func engineOrStatic(v load.Value) load.Value {
	if v.Source != load.SourceEngine && v.Source != load.SourceStatic {
		return load.Value{}
	}
	return v
}

// engineOnly keeps a value only the engine can know.
func engineOnly(v load.Value) load.Value {
	if v.Source != load.SourceEngine {
		return load.Value{}
	}
	return v
}

// busyView is what the busy rule sees of ranks: the engine's occupancy
// only while fresh, so a stale figure never decides busy (the rule then
// falls back to slotgate's own ActiveDecodeBlocks). ranks is not modified.
func busyView(ranks []load.Rank, stale bool) []load.Rank {
	if !stale {
		return ranks
	}
	in := slices.Clone(ranks)
	for i := range in {
		in[i].KVUsedBlocks = load.Value{}
	}
	return in
}
