package busy

import (
	"sync"

	"github.com/slotgate/slotgate/load"
)

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
// check whose inputs are unknown is false. It reads KVTotalBlocks,
// KVUsedBlocks, ActiveDecodeBlocks, ActivePrefillTokens and
// MaxNumBatchedTokens, whatever their source, and nothing else.
//
// DPRank identifies a rank between evaluations: the state kept for the
// next call is only, per DPRank, whether the decode check found the rank
// busy now (ranks should be unique; duplicates share one state). A
// threshold change discards it first, and a rank absent from ranks loses
// it.
//
// KVUsedBlocks is taken as the engine's authoritative occupancy whenever
// it is known: a caller whose engine figures are stale passes it unknown,
// so that the decode check falls back to slotgate's ActiveDecodeBlocks.
func (e *Evaluator) Evaluate(t Thresholds, ranks []load.Rank) Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !t.equal(e.last) {
		clear(e.latched)
		e.last = t.clone()
	}
	res := Result{Ranks: make([]bool, len(ranks)), Busy: len(ranks) > 0}
	// Rebuilt from scratch so that ranks which disappeared drop out.
	next := make(map[int]bool, len(ranks))
	for i := range ranks {
		r := &ranks[i]
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
