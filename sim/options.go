package sim

import (
	"errors"
	"fmt"
	"math"
)

// Defaults applied by New to zero fields. They are vLLM's (API server on a
// large GPU: max_num_batched_tokens 8192) and Dynamo mocker's (16384 blocks,
// 256 sequences), except the block size, which is vLLM's 16.
const (
	DefaultMaxNumSeqs          = 256
	DefaultNumGPUBlocks        = 16384
	DefaultBlockSize           = 16
	DefaultMaxNumBatchedTokens = 8192
	DefaultDataParallelSize    = 1
	DefaultMaxModelLen         = 8192
	DefaultSpeedupRatio        = 1.0
)

// Options configures an Engine. Zero fields take the defaults above, except
// MaxNumQueuedReqs and IterationStatsLimit, for which zero means "none".
type Options struct {
	// MaxNumSeqs bounds the running requests of each rank.
	MaxNumSeqs int
	// MaxNumQueuedReqs bounds running + waiting requests of each rank
	// (vllm-project/vllm#49445); 0 means unbounded.
	MaxNumQueuedReqs int
	// NumGPUBlocks is the KV pool of each rank, in blocks, the null block
	// included, as vLLM counts it.
	NumGPUBlocks int
	// BlockSize is the tokens per KV block.
	BlockSize int
	// MaxNumBatchedTokens bounds the tokens scheduled in one step of a rank.
	MaxNumBatchedTokens int
	// DataParallelSize is the number of ranks, each with its own scheduler
	// and pool.
	DataParallelSize int
	// MaxModelLen bounds prompt + max_tokens of one request.
	MaxModelLen int
	// SpeedupRatio divides every step time; above 1 runs faster than the
	// modelled GPU.
	SpeedupRatio float64
	// IterationStatsLimit is how many per-step records (TensorRT-LLM's
	// iteration stats) are kept until DrainIterations; 0 keeps none.
	IterationStatsLimit int
}

// withDefaults returns o with zero fields replaced by the defaults.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxNumSeqs, DefaultMaxNumSeqs)
	def(&o.NumGPUBlocks, DefaultNumGPUBlocks)
	def(&o.BlockSize, DefaultBlockSize)
	def(&o.MaxNumBatchedTokens, DefaultMaxNumBatchedTokens)
	def(&o.DataParallelSize, DefaultDataParallelSize)
	def(&o.MaxModelLen, DefaultMaxModelLen)
	if o.SpeedupRatio == 0 {
		o.SpeedupRatio = DefaultSpeedupRatio
	}
	return o
}

// validate returns every problem with o, joined.
func (o Options) validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, fmt.Errorf("%s: %s, got %v", field, rule, v))
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MaxNumSeqs", o.MaxNumSeqs}, {"BlockSize", o.BlockSize},
		{"DataParallelSize", o.DataParallelSize}, {"MaxNumBatchedTokens", o.MaxNumBatchedTokens},
	} {
		if f.v < 1 {
			bad(f.name, f.v, "must be positive")
		}
	}
	if o.MaxNumQueuedReqs < 0 {
		bad("MaxNumQueuedReqs", o.MaxNumQueuedReqs, "must not be negative")
	}
	if o.IterationStatsLimit < 0 {
		bad("IterationStatsLimit", o.IterationStatsLimit, "must not be negative")
	}
	if o.NumGPUBlocks < 2 {
		bad("NumGPUBlocks", o.NumGPUBlocks, "must be at least 2 (one is the null block)")
	}
	if o.MaxNumBatchedTokens < o.MaxNumSeqs {
		bad("MaxNumBatchedTokens", o.MaxNumBatchedTokens, fmt.Sprintf("must be at least MaxNumSeqs (%d), as vLLM requires", o.MaxNumSeqs))
	}
	if o.MaxModelLen < 2 {
		bad("MaxModelLen", o.MaxModelLen, "must be at least 2 (one prompt token and one output token)")
	} else if o.NumGPUBlocks >= 2 && o.BlockSize >= 1 && int64(o.MaxModelLen) > int64(o.NumGPUBlocks-1)*int64(o.BlockSize) {
		bad("MaxModelLen", o.MaxModelLen, fmt.Sprintf("must fit in one rank's KV pool, (NumGPUBlocks-1)*BlockSize = %d tokens",
			int64(o.NumGPUBlocks-1)*int64(o.BlockSize)))
	}
	if !(o.SpeedupRatio > 0) || math.IsInf(o.SpeedupRatio, 0) {
		bad("SpeedupRatio", o.SpeedupRatio, "must be a positive finite number")
	}
	return errors.Join(errs...)
}
