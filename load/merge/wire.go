package merge

import (
	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/report"
)

// wireRank converts a merged rank to the wire form frontends read, with
// its busy verdict. It is the one place where load's vocabulary becomes
// report's: report has a shape of its own because frontends import it and
// must not pull in the load packages. Flights is not published.
func wireRank(r *load.Rank, busy bool) report.Rank {
	return report.Rank{
		DPRank:              r.DPRank,
		Busy:                busy,
		KVTotalBlocks:       wireValue(r.KVTotalBlocks),
		KVUsedBlocks:        wireValue(r.KVUsedBlocks),
		ActiveDecodeBlocks:  wireValue(r.ActiveDecodeBlocks),
		ActivePrefillTokens: wireValue(r.ActivePrefillTokens),
		MaxNumBatchedTokens: wireValue(r.MaxNumBatchedTokens),
		NumRequestsRunning:  wireValue(r.NumRequestsRunning),
		NumRequestsWaiting:  wireValue(r.NumRequestsWaiting),
		BlockSize:           wireValue(r.BlockSize),
	}
}

// wireValue converts a value and its source; an unknown value stays
// unknown, never a 0.
func wireValue(v load.Value) report.Field {
	switch v.Source {
	case load.SourceEngine:
		return report.Field{N: v.N, Source: report.SourceEngine}
	case load.SourceStatic:
		return report.Field{N: v.N, Source: report.SourceStatic}
	case load.SourceSlotgate:
		return report.Field{N: v.N, Source: report.SourceSlotgate}
	}
	return report.Field{}
}
