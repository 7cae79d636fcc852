package load

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Dialect names how the engine reports its load.
type Dialect string

// The dialects. Options.Dialect takes one of them, or DialectAuto.
const (
	// DialectVLLM: vLLM's Prometheus text at GET /metrics.
	DialectVLLM Dialect = "vllm"
	// DialectSGLang: SGLang's JSON at GET /v1/loads.
	DialectSGLang Dialect = "sglang"
	// DialectTRTLLM: trtllm-serve's JSON iteration stats at GET /metrics,
	// drained on read.
	DialectTRTLLM Dialect = "trtllm"
	// DialectAuto: probe the engine until one of the three answers.
	DialectAuto Dialect = "auto"
	// DialectNone: do not scrape; the snapshot holds static values only.
	DialectNone Dialect = "none"
)

// Dialects lists the values Options.Dialect accepts.
func Dialects() []Dialect {
	return []Dialect{DialectAuto, DialectVLLM, DialectSGLang, DialectTRTLLM, DialectNone}
}

// Rank is the load of one data-parallel rank. Each field is a Value that
// says whether it is known and where it came from.
type Rank struct {
	// DPRank is the rank's global data-parallel index (vLLM's engine label,
	// SGLang's dp_rank, TensorRT-LLM's attentionDpRank).
	DPRank int
	// KVTotalBlocks is the rank's KV cache capacity in blocks.
	KVTotalBlocks Value
	// KVUsedBlocks is the blocks held by the rank's running requests.
	KVUsedBlocks Value
	// NumRequestsRunning and NumRequestsWaiting are the engine's own
	// running batch and waiting queue.
	NumRequestsRunning Value
	NumRequestsWaiting Value
	// PrefillTokens is the prompt tokens the engine still has to compute
	// (SGLang's num_waiting_uncached_tokens; TensorRT-LLM's numCtxTokens +
	// numQueuedCtxTokens); vLLM does not export it.
	PrefillTokens Value
	// MaxNumBatchedTokens is the rank's token budget per step.
	MaxNumBatchedTokens Value
	// BlockSize is the tokens per KV block (SGLang's page size).
	BlockSize Value
}

// values lists the rank's fields with their names, for checks and tests.
func (r *Rank) values() []struct {
	name string
	v    *Value
} {
	return []struct {
		name string
		v    *Value
	}{
		{"kv_total_blocks", &r.KVTotalBlocks}, {"kv_used_blocks", &r.KVUsedBlocks},
		{"num_requests_running", &r.NumRequestsRunning}, {"num_requests_waiting", &r.NumRequestsWaiting},
		{"prefill_tokens", &r.PrefillTokens}, {"max_num_batched_tokens", &r.MaxNumBatchedTokens},
		{"block_size", &r.BlockSize},
	}
}

// EngineLoad is one snapshot of the engine's load. A snapshot returned by
// Scraper.Load is the caller's own: nothing else refers to its Ranks.
type EngineLoad struct {
	// Dialect is the dialect in use; empty while DialectAuto has not yet
	// recognised the engine.
	Dialect Dialect
	// Ranks are sorted by DPRank, one per rank, no duplicates.
	Ranks []Rank
	// At is when the engine values were last scraped successfully; zero
	// when they never were (DialectNone, or no success yet).
	At time.Time
	// Stale is true once FailedScrapes reached StaleAfter; the engine
	// values are then those of the last success, at At.
	Stale bool
	// FailedScrapes counts consecutive failed scrapes; 0 after a success.
	FailedScrapes int
	// Err is the last scrape's error while FailedScrapes > 0.
	Err string
}

// clone returns a copy of l that shares nothing with it.
func (l EngineLoad) clone() EngineLoad {
	l.Ranks = slices.Clone(l.Ranks)
	return l
}

// maxDPRank bounds the DP rank a parser accepts: no deployment comes near
// it, and it keeps a hostile body from making the ranks huge.
const maxDPRank = 1 << 16

// errInsane is wrapped by the parsers' errors for values no engine sends.
var errInsane = errors.New("implausible value")

// checkRanks returns an error unless every known value of every rank is
// non-negative, used ≤ total where both are known, and the ranks are
// sorted and unique within [0, maxDPRank).
func checkRanks(ranks []Rank) error {
	for i := range ranks {
		r := &ranks[i]
		if r.DPRank < 0 || r.DPRank >= maxDPRank {
			return fmt.Errorf("%w: dp rank %d", errInsane, r.DPRank)
		}
		if i > 0 && ranks[i-1].DPRank >= r.DPRank {
			return fmt.Errorf("%w: dp rank %d repeated or out of order", errInsane, r.DPRank)
		}
		for _, f := range r.values() {
			if f.v.Known() && f.v.N < 0 {
				return fmt.Errorf("%w: rank %d %s = %d", errInsane, r.DPRank, f.name, f.v.N)
			}
		}
		if r.KVUsedBlocks.Known() && r.KVTotalBlocks.Known() && r.KVUsedBlocks.N > r.KVTotalBlocks.N {
			return fmt.Errorf("%w: rank %d uses %d of %d KV blocks", errInsane, r.DPRank, r.KVUsedBlocks.N, r.KVTotalBlocks.N)
		}
	}
	return nil
}

// sortRanks sorts ranks by DPRank.
func sortRanks(ranks []Rank) {
	slices.SortFunc(ranks, func(a, b Rank) int { return a.DPRank - b.DPRank })
}
