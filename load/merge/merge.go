package merge

import (
	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/load/report"
)

// Sources are what a Snapshot is computed from. Compute is meant for
// HubOptions.Compute: it must be called from one goroutine at a time,
// since the Evaluator keeps state between calls.
type Sources struct {
	// Engine returns the engine's latest scraped load. Required.
	Engine func() load.EngineLoad
	// Flights is slotgate's view of its requests in flight. Required.
	Flights *inflight.Tracker
	// Requests returns the limiter's state. Required.
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
	snap := report.Snapshot{
		Stale: eng.Stale,
		Engine: report.Engine{
			Dialect: string(eng.Dialect), ScrapedAt: eng.At, FailedScrapes: eng.FailedScrapes, Error: eng.Err,
		},
		Requests:   s.Requests(),
		Thresholds: report.Thresholds(th),
	}
	snap.Ranks = mergeRanks(eng, s.Flights)
	inputs := make([]busy.RankInput, len(snap.Ranks))
	for i := range snap.Ranks {
		inputs[i] = busyInput(&snap.Ranks[i], eng.Stale)
	}
	res := s.Evaluator.Evaluate(th, inputs)
	snap.Busy = res.Busy
	for i := range snap.Ranks {
		snap.Ranks[i].Busy = res.Ranks[i]
	}
	return snap
}

// mergeRanks returns one Rank per engine rank (rank 0 alone when the
// engine reports none), the engine's and static values with slotgate's
// view of its flights.
func mergeRanks(eng load.EngineLoad, flights *inflight.Tracker) []report.Rank {
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
	view := flights.View(ids, blockSize)
	out := make([]report.Rank, len(engRanks))
	for i := range engRanks {
		out[i] = mergeRank(&engRanks[i], view[i], blockSize > 0, eng.Stale)
	}
	return out
}

func mergeRank(er *load.Rank, own inflight.RankLoad, knowBlocks, stale bool) report.Rank {
	r := report.Rank{
		DPRank:              er.DPRank,
		KVTotalBlocks:       field(er.KVTotalBlocks),
		KVUsedBlocks:        engineOnly(er.KVUsedBlocks),
		MaxNumBatchedTokens: field(er.MaxNumBatchedTokens),
		NumRequestsRunning:  engineOnly(er.NumRequestsRunning),
		NumRequestsWaiting:  engineOnly(er.NumRequestsWaiting),
		BlockSize:           field(er.BlockSize),
		ActivePrefillTokens: report.Field{N: own.PrefillTokens, Source: report.SourceSlotgate},
	}
	if knowBlocks {
		r.ActiveDecodeBlocks = report.Field{N: own.DecodeBlocks, Source: report.SourceSlotgate}
	}
	// The engine knows its own prefill backlog better than slotgate's
	// estimate, but only while its figures are fresh.
	if p := engineOnly(er.PrefillTokens); p.Known() && !stale {
		r.ActivePrefillTokens = p
	}
	return r
}

// field converts a scraped value, engine or static.
func field(v load.Value) report.Field {
	switch v.Source {
	case load.SourceEngine:
		return report.Field{N: v.N, Source: report.SourceEngine}
	case load.SourceStatic:
		return report.Field{N: v.N, Source: report.SourceStatic}
	}
	return report.Field{}
}

// engineOnly converts a value only the engine can know.
func engineOnly(v load.Value) report.Field {
	if v.Source != load.SourceEngine {
		return report.Field{}
	}
	return field(v)
}

// busyInput is what the busy rule sees of r: the engine's occupancy only
// while fresh, so a stale figure never decides busy.
func busyInput(r *report.Rank, stale bool) busy.RankInput {
	in := busy.RankInput{
		DPRank:              r.DPRank,
		KVTotalBlocks:       count(r.KVTotalBlocks),
		ActiveDecodeBlocks:  count(r.ActiveDecodeBlocks),
		ActivePrefillTokens: count(r.ActivePrefillTokens),
		MaxNumBatchedTokens: count(r.MaxNumBatchedTokens),
	}
	if !stale {
		in.KVUsedBlocks = count(r.KVUsedBlocks)
	}
	return in
}

func count(f report.Field) busy.Count { return busy.Count{N: f.N, Known: f.Known()} }
