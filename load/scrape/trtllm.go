package scrape

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/slotgate/slotgate/load"
)

// trtIteration is the part of one TensorRT-LLM iteration-stats object that
// slotgate reads (cpp/tensorrt_llm/executor/jsonSerialization.cpp).
// Pointers tell a missing field from 0.
type trtIteration struct {
	Iter                *int64       `json:"iter"`
	NumActiveRequests   *int64       `json:"numActiveRequests"`
	NumQueuedRequests   *int64       `json:"numQueuedRequests"`
	MaxNumTokensRuntime *int64       `json:"maxNumTokensRuntime"`
	AttentionDPRank     *int64       `json:"attentionDpRank"`
	KVCacheStats        *trtKVCache  `json:"kvCacheStats"`
	Inflight            *trtInflight `json:"inflightBatchingStats"`
}

type trtKVCache struct {
	MaxNumBlocks   *int64 `json:"maxNumBlocks"`
	UsedNumBlocks  *int64 `json:"usedNumBlocks"`
	TokensPerBlock *int64 `json:"tokensPerBlock"`
}

// trtInflight has numCtxTokens and, since NVIDIA/TensorRT-LLM#13199 (the
// PyTorch backend), numQueuedCtxTokens.
type trtInflight struct {
	NumCtxTokens       *int64 `json:"numCtxTokens"`
	NumQueuedCtxTokens *int64 `json:"numQueuedCtxTokens"`
}

// ParseTRTLLM reads trtllm-serve's GET /metrics, a JSON array of iteration
// stats, and returns one Rank per attentionDpRank present (rank 0 for
// entries without it), from the entry with the highest iter (the later in
// the array on a tie), sorted by rank:
//
//   - NumRequestsRunning and NumRequestsWaiting from numActiveRequests and
//     numQueuedRequests;
//   - KVTotalBlocks, KVUsedBlocks and BlockSize from kvCacheStats'
//     maxNumBlocks, usedNumBlocks and tokensPerBlock;
//   - ActivePrefillTokens from inflightBatchingStats' numCtxTokens +
//     numQueuedCtxTokens (either may be missing; both missing: unknown);
//   - MaxNumBatchedTokens from maxNumTokensRuntime when positive.
//
// The endpoint drains on read: an empty array means "no iteration since
// the last read", and ParseTRTLLM returns no ranks and no error; the
// caller keeps the values it had. It fails on a body that is not a JSON
// array of objects, or on a negative count or used > total blocks.
func ParseTRTLLM(r io.Reader) ([]load.Rank, error) {
	var iters []trtIteration
	if err := json.NewDecoder(r).Decode(&iters); err != nil {
		return nil, fmt.Errorf("parse trtllm iteration stats: %w", err)
	}
	latest := map[int]int{} // rank → index in iters
	for i, it := range iters {
		rank := 0
		if it.AttentionDPRank != nil {
			if *it.AttentionDPRank < 0 || *it.AttentionDPRank >= maxDPRank {
				return nil, fmt.Errorf("parse trtllm iteration stats: %w: attentionDpRank %d", errInsane, *it.AttentionDPRank)
			}
			rank = int(*it.AttentionDPRank)
		}
		if j, ok := latest[rank]; !ok || iterOf(it) >= iterOf(iters[j]) {
			latest[rank] = i
		}
	}
	out := make([]load.Rank, 0, len(latest))
	for rank, i := range latest {
		out = append(out, trtRank(rank, iters[i]))
	}
	sortRanks(out)
	if err := checkRanks(out); err != nil {
		return nil, fmt.Errorf("parse trtllm iteration stats: %w", err)
	}
	return out, nil
}

// iterOf is the entry's iteration number; -1 without one.
func iterOf(it trtIteration) int64 {
	if it.Iter == nil {
		return -1
	}
	return *it.Iter
}

func trtRank(rank int, it trtIteration) load.Rank {
	r := load.Rank{
		DPRank: rank, NumRequestsRunning: engineIfPresent(it.NumActiveRequests),
		NumRequestsWaiting: engineIfPresent(it.NumQueuedRequests), MaxNumBatchedTokens: positive(it.MaxNumTokensRuntime),
	}
	if kv := it.KVCacheStats; kv != nil {
		r.KVTotalBlocks = engineIfPresent(kv.MaxNumBlocks)
		r.KVUsedBlocks = engineIfPresent(kv.UsedNumBlocks)
		r.BlockSize = engineIfPresent(kv.TokensPerBlock)
	}
	if ib := it.Inflight; ib != nil && (ib.NumCtxTokens != nil || ib.NumQueuedCtxTokens != nil) {
		var n int64
		for _, p := range []*int64{ib.NumCtxTokens, ib.NumQueuedCtxTokens} {
			if p != nil {
				if *p < 0 || n > maxCount {
					n = -1 // checkRanks refuses it
					break
				}
				n += *p
			}
		}
		r.ActivePrefillTokens = fromEngine(n)
	}
	return r
}
