package busy

import (
	"math"

	"github.com/slotgate/slotgate/load"
)

// DefaultMaxNumBatchedTokens stands in for an unknown max_num_batched_tokens
// in the prefill fraction check. It is Dynamo's DEFAULT_MAX_TOKENS: so large
// that the check practically never fires without the engine's real budget.
const DefaultMaxNumBatchedTokens = 10_000_000

// bandFraction and minBandBlocks size the decode check's hysteresis band:
// a rank busy by the decode check stays busy until its blocks in use fall
// to the limit minus the band, where the band is 5% of the limit, but at
// least one block. Block counts are integers; without the one-block
// minimum a limit below 20 blocks could leave no integer inside the band,
// and a signal moving by one block across the limit would flap.
const (
	bandFraction  = 0.05
	minBandBlocks = 1
)

// decodeBusy is the decode check for one rank. wasBusy is whether the check
// found the rank busy at the previous evaluation.
//
// The check reads one signal, chosen afresh each time: the engine's
// KVUsedBlocks when known (authoritative), else slotgate's estimate. The
// hysteresis compares that one value with the clear level, so a rank stays
// busy only while the signal at hand says it is still near the limit.
// Dynamo's latch instead waited for both signals to report low, and stuck
// when one stopped arriving (ai-dynamo/dynamo#10564).
func decodeBusy(threshold *float64, r *load.Rank, wasBusy bool) bool {
	if threshold == nil || !validFraction(*threshold) {
		return false
	}
	if !r.KVTotalBlocks.Known() || r.KVTotalBlocks.N <= 0 {
		return false // Dynamo: no capacity, no decode check
	}
	signal, ok := decodeSignal(r)
	if !ok {
		return false // no evidence either way: the state clears
	}
	limit := *threshold * float64(r.KVTotalBlocks.N)
	used := float64(signal)
	if used > limit {
		return true
	}
	return wasBusy && used > clearLevel(limit)
}

// decodeSignal picks the blocks in use the decode check reads.
func decodeSignal(r *load.Rank) (int64, bool) {
	if r.KVUsedBlocks.Known() {
		return r.KVUsedBlocks.N, true
	}
	if r.ActiveDecodeBlocks.Known() {
		return r.ActiveDecodeBlocks.N, true
	}
	return 0, false
}

// clearLevel is the blocks in use at or below which a busy rank clears. It
// is never below 0, so that a signal of 0 always clears: with a threshold
// of 0 a rank is busy at any block in use and clears at none.
func clearLevel(limit float64) float64 {
	band := max(limit*bandFraction, minBandBlocks)
	return max(limit-band, 0)
}

// prefillBusy is the absolute prefill check.
func prefillBusy(threshold *uint64, tokens load.Value) bool {
	if threshold == nil || !tokens.Known() || tokens.N < 0 {
		return false
	}
	return uint64(tokens.N) > *threshold
}

// prefillFracBusy is the prefill fraction check. The limit is truncated to
// an integer as Dynamo's `as u64` does, saturating.
func prefillFracBusy(frac *float64, r *load.Rank) bool {
	tokens := r.ActivePrefillTokens
	if frac == nil || !validFrac(*frac) || !tokens.Known() || tokens.N < 0 {
		return false
	}
	budget := int64(DefaultMaxNumBatchedTokens)
	// A budget of 0 would make every pending token busy; an engine cannot
	// run with it, so it is taken as a missing value rather than a real one.
	if m := r.MaxNumBatchedTokens; m.Known() && m.N > 0 {
		budget = m.N
	}
	return uint64(tokens.N) > saturatingUint64(*frac*float64(budget))
}

// saturatingUint64 converts like Rust's `as u64`: NaN and negatives give 0,
// values beyond the range give the maximum. Go leaves such conversions
// implementation-defined.
func saturatingUint64(v float64) uint64 {
	switch {
	case !(v > 0):
		return 0
	case v >= 0x1p64:
		return math.MaxUint64
	default:
		return uint64(v)
	}
}
