package scrape

import (
	"errors"
	"fmt"

	"github.com/slotgate/slotgate/load"
)

// Overrides are static values for what an engine does not export. Zero
// means "not set". An override never replaces a value the engine reports:
// it fills the gap and is marked load.SourceStatic.
type Overrides struct {
	// KVTotalBlocks is each rank's KV capacity in blocks (--kv-total-blocks).
	KVTotalBlocks int64
	// BlockSize is the tokens per KV block (--block-size). With SGLang it is
	// also the page size that turns /v1/loads' tokens into blocks, and
	// slotgate then does not ask the server for it.
	BlockSize int64
	// MaxNumBatchedTokens is each rank's token budget per step
	// (--max-num-batched-tokens); vLLM does not export it.
	MaxNumBatchedTokens int64
	// DataParallelSize is the number of DP ranks this engine endpoint serves
	// (--data-parallel-size): for vLLM, the engines its API server manages
	// (1 for an external-load-balancer rank), which num_gpu_blocks is
	// divided by instead of the ranks seen. In every dialect the ranks
	// 0..DataParallelSize-1 the engine has not reported yet appear with
	// their static values only.
	DataParallelSize int
}

// validate returns every problem with o, joined.
func (o Overrides) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"KVTotalBlocks", o.KVTotalBlocks}, {"BlockSize", o.BlockSize},
		{"MaxNumBatchedTokens", o.MaxNumBatchedTokens}, {"DataParallelSize", int64(o.DataParallelSize)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("overrides: %s must not be negative, got %d", f.name, f.v))
		}
	}
	if o.DataParallelSize > maxDPRank {
		errs = append(errs, fmt.Errorf("overrides: DataParallelSize must be at most %d, got %d", maxDPRank, o.DataParallelSize))
	}
	return errors.Join(errs...)
}

// apply returns ranks with the ranks [0, dpSize) added where missing and
// the static values filled in where the engine's are unknown, sorted by
// rank. ranks is not modified.
func (o Overrides) apply(ranks []load.Rank, dpSize int) []load.Rank {
	out := make([]load.Rank, 0, max(len(ranks), dpSize))
	out = append(out, ranks...)
	have := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		have[r.DPRank] = true
	}
	for id := range dpSize {
		if !have[id] {
			out = append(out, load.Rank{DPRank: id})
		}
	}
	sortRanks(out)
	for i := range out {
		r := &out[i]
		fill(&r.KVTotalBlocks, o.KVTotalBlocks)
		fill(&r.BlockSize, o.BlockSize)
		fill(&r.MaxNumBatchedTokens, o.MaxNumBatchedTokens)
		if r.KVUsedBlocks.Known() && r.KVTotalBlocks.Source == load.SourceStatic && r.KVUsedBlocks.N > r.KVTotalBlocks.N {
			// A static total below what the engine reports in use is wrong;
			// trust the engine and keep used ≤ total.
			r.KVTotalBlocks = fromStatic(r.KVUsedBlocks.N)
		}
	}
	return out
}

// fill sets *v to the static n when n is set and *v unknown.
func fill(v *load.Value, n int64) {
	if n > 0 && !v.Known() {
		*v = fromStatic(n)
	}
}
