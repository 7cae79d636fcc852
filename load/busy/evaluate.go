package busy

import "sync"

// Count is one load value as the evaluator sees it: N is meaningful only
// when Known. An unknown value is never taken for 0.
type Count struct {
	N     int64
	Known bool
}

// RankInput is one data-parallel rank's load as the evaluator sees it.
type RankInput struct {
	// DPRank identifies the rank between evaluations: hysteresis state is
	// kept per DPRank. Ranks should be unique; duplicates share one state.
	DPRank int
	// KVTotalBlocks is the rank's KV capacity in blocks.
	KVTotalBlocks Count
	// KVUsedBlocks is the engine's KV blocks in use. The caller passes it
	// as unknown when the engine's snapshot is stale, so that the decode
	// check falls back to ActiveDecodeBlocks.
	KVUsedBlocks Count
	// ActiveDecodeBlocks is slotgate's own estimate of the blocks its
	// requests hold; it keeps flowing when the engine's metrics stop.
	ActiveDecodeBlocks Count
	// ActivePrefillTokens is the prompt tokens not yet computed.
	ActivePrefillTokens Count
	// MaxNumBatchedTokens is the rank's token budget per step; unknown (or
	// not positive) means DefaultMaxNumBatchedTokens.
	MaxNumBatchedTokens Count
}

// Result is the outcome of one evaluation.
type Result struct {
	// Ranks holds each rank's busy state, in the order of the input.
	Ranks []bool
	// Busy is the worker's: at least one rank, and every rank busy.
	Busy bool
}

// Evaluator applies the busy rule and keeps the decode check's hysteresis
// state per rank between evaluations. Its methods are safe for concurrent
// use (a mutex serializes them), although a publishing loop normally calls
// Evaluate from one goroutine. The zero value is not ready; use
// NewEvaluator.
type Evaluator struct {
	mu sync.Mutex
	// last is a copy of the thresholds of the previous evaluation; a
	// change drops latched.
	last Thresholds
	// latched holds the ranks that were busy by the decode check at the
	// previous evaluation, the only state the rule carries over.
	latched map[int]bool
}

// NewEvaluator returns an Evaluator with no hysteresis state.
func NewEvaluator() *Evaluator {
	return &Evaluator{latched: map[int]bool{}}
}

// Evaluate applies the busy rule (see the package documentation) to ranks
// under t and returns each rank's state and the worker's. It never fails:
// a check with an invalid threshold (one Validate rejects) is off, and a
// check whose inputs are unknown is false.
//
// The state kept for the next call is only, per rank, whether the decode
// check found it busy now. A threshold change discards it first, and a
// rank absent from ranks loses it.
func (e *Evaluator) Evaluate(t Thresholds, ranks []RankInput) Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !t.equal(e.last) {
		clear(e.latched)
		e.last = t.clone()
	}
	res := Result{Ranks: make([]bool, len(ranks)), Busy: len(ranks) > 0}
	// Rebuilt from scratch so that ranks which disappeared drop out.
	next := make(map[int]bool, len(ranks))
	for i, r := range ranks {
		decode := decodeBusy(t.ActiveDecodeBlocks, r, e.latched[r.DPRank])
		if decode {
			next[r.DPRank] = true
		}
		res.Ranks[i] = decode ||
			prefillBusy(t.ActivePrefillTokens, r.ActivePrefillTokens) ||
			prefillFracBusy(t.ActivePrefillTokensFrac, r)
		res.Busy = res.Busy && res.Ranks[i]
	}
	e.latched = next
	return res
}
