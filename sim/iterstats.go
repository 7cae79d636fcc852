package sim

import (
	"sync"
	"time"
)

// IterationStats is one step of one rank in TensorRT-LLM's iteration-stats
// JSON (executor IterationStats, cpp/tensorrt_llm/executor/
// jsonSerialization.cpp), as trtllm-serve's GET /metrics returns it.
// Memory fields are 0: there is no GPU.
type IterationStats struct {
	Timestamp                       string                `json:"timestamp"`
	Iter                            uint64                `json:"iter"`
	IterLatencyMS                   float64               `json:"iterLatencyMS"`
	NewActiveRequestsQueueLatencyMS float64               `json:"newActiveRequestsQueueLatencyMS"`
	NumActiveRequests               int                   `json:"numActiveRequests"`
	NumQueuedRequests               int                   `json:"numQueuedRequests"`
	NumCompletedRequests            int                   `json:"numCompletedRequests"`
	MaxNumActiveRequests            int                   `json:"maxNumActiveRequests"`
	MaxBatchSizeStatic              int                   `json:"maxBatchSizeStatic"`
	MaxBatchSizeRuntime             int                   `json:"maxBatchSizeRuntime"`
	MaxNumTokensStatic              int                   `json:"maxNumTokensStatic"`
	MaxNumTokensTunerRecommended    int                   `json:"maxNumTokensTunerRecommended"`
	MaxNumTokensRuntime             int                   `json:"maxNumTokensRuntime"`
	GPUMemUsage                     int64                 `json:"gpuMemUsage"`
	CPUMemUsage                     int64                 `json:"cpuMemUsage"`
	PinnedMemUsage                  int64                 `json:"pinnedMemUsage"`
	KVCacheStats                    KVCacheStats          `json:"kvCacheStats"`
	InflightBatchingStats           InflightBatchingStats `json:"inflightBatchingStats"`
	AttentionDPRank                 int                   `json:"attentionDpRank"`
}

// KVCacheStats is the kvCacheStats object; block counts are cumulative
// where TensorRT-LLM's are (alloc*, reused, missed).
type KVCacheStats struct {
	MaxNumBlocks     int     `json:"maxNumBlocks"`
	FreeNumBlocks    int     `json:"freeNumBlocks"`
	UsedNumBlocks    int     `json:"usedNumBlocks"`
	TokensPerBlock   int     `json:"tokensPerBlock"`
	AllocTotalBlocks uint64  `json:"allocTotalBlocks"`
	AllocNewBlocks   uint64  `json:"allocNewBlocks"`
	ReusedBlocks     uint64  `json:"reusedBlocks"`
	MissedBlocks     uint64  `json:"missedBlocks"`
	CacheHitRate     float64 `json:"cacheHitRate"`
}

// InflightBatchingStats is the inflightBatchingStats object, with the
// queued and KV-token fields of NVIDIA/TensorRT-LLM#13199.
type InflightBatchingStats struct {
	NumScheduledRequests       int     `json:"numScheduledRequests"`
	NumContextRequests         int     `json:"numContextRequests"`
	NumGenRequests             int     `json:"numGenRequests"`
	NumPausedRequests          int     `json:"numPausedRequests"`
	NumCtxTokens               int     `json:"numCtxTokens"`
	MicroBatchID               int     `json:"microBatchId"`
	AvgNumDecodedTokensPerIter float64 `json:"avgNumDecodedTokensPerIter"`
	NumCtxKvTokens             int     `json:"numCtxKvTokens"`
	NumGenKvTokens             int     `json:"numGenKvTokens"`
	NumQueuedContextRequests   int     `json:"numQueuedContextRequests"`
	NumQueuedCtxTokens         int     `json:"numQueuedCtxTokens"`
	NumQueuedGenRequests       int     `json:"numQueuedGenRequests"`
	NumQueuedGenKvTokens       int     `json:"numQueuedGenKvTokens"`
	NumPausedKvTokens          int     `json:"numPausedKvTokens"`
}

// timestampLayout is TensorRT-LLM's iteration timestamp: month first,
// microseconds.
const timestampLayout = "01-02-2006 15:04:05.000000"

// iterationStats describes the step st that just completed, ended of its
// requests having ended. The caller holds r.mu.
func (r *rank) iterationStats(st *step, ended int, now time.Time) IterationStats {
	it := IterationStats{
		Timestamp: now.UTC().Format(timestampLayout), Iter: r.counters.steps - 1,
		IterLatencyMS:     float64(st.duration) / float64(time.Millisecond),
		NumActiveRequests: len(r.running), NumQueuedRequests: len(r.waiting), NumCompletedRequests: ended,
		MaxNumActiveRequests: r.opts.MaxNumSeqs, MaxBatchSizeStatic: r.opts.MaxNumSeqs, MaxBatchSizeRuntime: r.opts.MaxNumSeqs,
		MaxNumTokensStatic: r.opts.MaxNumBatchedTokens, MaxNumTokensTunerRecommended: r.opts.MaxNumBatchedTokens,
		MaxNumTokensRuntime: r.opts.MaxNumBatchedTokens,
		KVCacheStats: KVCacheStats{
			MaxNumBlocks: r.usable, FreeNumBlocks: r.free(), UsedNumBlocks: r.used, TokensPerBlock: r.opts.BlockSize,
			AllocTotalBlocks: r.counters.allocatedBlocks, AllocNewBlocks: r.counters.allocatedBlocks,
			MissedBlocks: r.counters.allocatedBlocks,
		},
		AttentionDPRank: r.id,
	}
	ib := &it.InflightBatchingStats
	ib.NumScheduledRequests = len(st.works)
	ib.NumCtxTokens = st.prefillTokens
	ib.NumGenRequests = st.decodes
	ib.NumContextRequests = len(st.works) - st.decodes
	if st.decodes > 0 {
		ib.AvgNumDecodedTokensPerIter = 1
	}
	for _, w := range st.works {
		if w.decode {
			ib.NumGenKvTokens += w.s.computed
		} else {
			ib.NumCtxKvTokens += w.s.computed
		}
	}
	for _, s := range r.waiting {
		if s.preempted {
			ib.NumPausedRequests++
			ib.NumPausedKvTokens += s.total()
		} else {
			ib.NumQueuedContextRequests++
			ib.NumQueuedCtxTokens += s.total()
		}
	}
	return it
}

// iterBuffer keeps the newest records, up to limit, until drained.
type iterBuffer struct {
	limit int

	mu    sync.Mutex
	ring  []IterationStats
	start int // index of the oldest record in ring
	n     int
}

func newIterBuffer(limit int) *iterBuffer {
	return &iterBuffer{limit: limit, ring: make([]IterationStats, limit)}
}

// push adds it, dropping the oldest record when full.
func (b *iterBuffer) push(it IterationStats) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ring[(b.start+b.n)%b.limit] = it
	if b.n < b.limit {
		b.n++
	} else {
		b.start = (b.start + 1) % b.limit
	}
}

// drain returns the records, oldest first, and empties the buffer.
func (b *iterBuffer) drain() []IterationStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]IterationStats, b.n)
	for i := range out {
		out[i] = b.ring[(b.start+i)%b.limit]
	}
	b.start, b.n = 0, 0
	return out
}
