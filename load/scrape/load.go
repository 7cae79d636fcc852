package scrape

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotgate/slotgate/load"
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

// EngineLoad is one snapshot of the engine's load. A snapshot returned by
// Scraper.Load is the caller's own: nothing else refers to its Ranks.
type EngineLoad struct {
	// Dialect is the dialect in use; empty while DialectAuto has not yet
	// recognised the engine.
	Dialect Dialect
	// Ranks are sorted by DPRank, one per rank, no duplicates. Only the
	// engine's and the static values are set: ActiveDecodeBlocks and
	// Flights are always unknown, ActivePrefillTokens is the engine's
	// backlog where it exports one.
	Ranks []load.Rank
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

// namedValue is one of a rank's values and the name errors give it.
type namedValue struct {
	name string
	v    *load.Value
}

// scraped lists the values of r a scrape can set, with their names for
// errors. The names are those the errors have always carried (they reach
// the published snapshot's engine error), hence prefill_tokens.
func scraped(r *load.Rank) [7]namedValue {
	return [7]namedValue{
		{"kv_total_blocks", &r.KVTotalBlocks}, {"kv_used_blocks", &r.KVUsedBlocks},
		{"num_requests_running", &r.NumRequestsRunning}, {"num_requests_waiting", &r.NumRequestsWaiting},
		{"prefill_tokens", &r.ActivePrefillTokens}, {"max_num_batched_tokens", &r.MaxNumBatchedTokens},
		{"block_size", &r.BlockSize},
	}
}

// checkRanks returns an error unless every known value of every rank is
// non-negative, used ≤ total where both are known, and the ranks are
// sorted and unique within [0, maxDPRank).
func checkRanks(ranks []load.Rank) error {
	for i := range ranks {
		r := &ranks[i]
		if r.DPRank < 0 || r.DPRank >= maxDPRank {
			return fmt.Errorf("%w: dp rank %d", errInsane, r.DPRank)
		}
		if i > 0 && ranks[i-1].DPRank >= r.DPRank {
			return fmt.Errorf("%w: dp rank %d repeated or out of order", errInsane, r.DPRank)
		}
		for _, f := range scraped(r) {
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
func sortRanks(ranks []load.Rank) {
	slices.SortFunc(ranks, func(a, b load.Rank) int { return a.DPRank - b.DPRank })
}

// fromEngine is a value scraped from the engine.
func fromEngine(n int64) load.Value { return load.Value{N: n, Source: load.SourceEngine} }

// fromStatic is a value from a static override.
func fromStatic(n int64) load.Value { return load.Value{N: n, Source: load.SourceStatic} }

// engineIfPresent is fromEngine(*p), or unknown when p is nil.
func engineIfPresent(p *int64) load.Value {
	if p == nil {
		return load.Value{}
	}
	return fromEngine(*p)
}
