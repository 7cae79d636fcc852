package exposition

import (
	"strconv"

	"github.com/slotgate/slotgate/load"
)

// slotgate's own gauges, one series each, summed over the ranks, for a
// picker's engineConfigs entry: the picker reads the first series that
// matches, so a per-rank family shows it rank 0 alone; these show it the
// whole pod.
const (
	PodWaiting = "slotgate_pod_waiting_requests"
	PodRunning = "slotgate_pod_running_requests"
	PodKVUsage = "slotgate_pod_kv_cache_usage_perc"
)

// TensorRT-LLM's Prometheus names (tensorrt_llm/metrics/collector.py), the
// ones the pickers' built-in trtllm-serve configuration reads.
const (
	TRTLLMWaiting        = "trtllm_num_requests_waiting"
	TRTLLMRunning        = "trtllm_num_requests_running"
	TRTLLMKVUsage        = "trtllm_kv_cache_utilization"
	TRTLLMKVMaxBlocks    = "trtllm_kv_cache_max_blocks"
	TRTLLMTokensPerBlock = "trtllm_kv_cache_tokens_per_block"
)

// AppendPod appends slotgate's pod gauges: the engine's waiting requests
// on every rank plus queued, the engine's running requests, and the KV
// blocks in use over the total. A gauge whose figure is unknown on some
// rank is left out rather than guessed, so the picker reports it missing.
func AppendPod(dst []byte, ranks []load.Rank, queued int64) []byte {
	if w, ok := sum(ranks, func(r load.Rank) load.Value { return r.NumRequestsWaiting }); ok {
		dst = appendGauge(dst, PodWaiting, "The engine's waiting requests on every rank plus slotgate's queued requests.", float64(w+queued))
	}
	if n, ok := sum(ranks, func(r load.Rank) load.Value { return r.NumRequestsRunning }); ok {
		dst = appendGauge(dst, PodRunning, "The engine's running requests on every rank, as the engine reports them.", float64(n))
	}
	if u, ok := kvUsage(ranks); ok {
		dst = appendGauge(dst, PodKVUsage, "KV cache blocks in use over the total, every rank. 1 means 100 percent usage.", u)
	}
	return dst
}

// TRTLLM renders, from TensorRT-LLM's scraped iteration stats, the gauges
// its own /prometheus/metrics would carry and a picker reads, summed over
// the attention-DP ranks. slotgate's queue is added later, by AddQueue.
func TRTLLM(dst []byte, ranks []load.Rank) []byte {
	help := " (rendered by slotgate from TensorRT-LLM's iteration stats)"
	if n, ok := sum(ranks, func(r load.Rank) load.Value { return r.NumRequestsWaiting }); ok {
		dst = appendGauge(dst, TRTLLMWaiting, "Number of requests waiting"+help, float64(n))
	}
	if n, ok := sum(ranks, func(r load.Rank) load.Value { return r.NumRequestsRunning }); ok {
		dst = appendGauge(dst, TRTLLMRunning, "Number of requests running"+help, float64(n))
	}
	if u, ok := kvUsage(ranks); ok {
		dst = appendGauge(dst, TRTLLMKVUsage, "KV cache utilization, used over max blocks"+help, u)
	}
	if n, ok := sum(ranks, func(r load.Rank) load.Value { return r.KVTotalBlocks }); ok {
		dst = appendGauge(dst, TRTLLMKVMaxBlocks, "KV cache blocks in all"+help, float64(n))
	}
	if len(ranks) > 0 && ranks[0].BlockSize.Known() {
		dst = appendGauge(dst, TRTLLMTokensPerBlock, "Tokens per KV cache block"+help, float64(ranks[0].BlockSize.N))
	}
	return dst
}

// sum adds f over ranks; false when there is no rank or f is unknown on one.
func sum(ranks []load.Rank, f func(load.Rank) load.Value) (int64, bool) {
	var n int64
	for _, r := range ranks {
		v := f(r)
		if !v.Known() {
			return 0, false
		}
		n += v.N
	}
	return n, len(ranks) > 0
}

// kvUsage is the blocks in use over the blocks in all; false when either
// is unknown or there are none.
func kvUsage(ranks []load.Rank) (float64, bool) {
	used, okUsed := sum(ranks, func(r load.Rank) load.Value { return r.KVUsedBlocks })
	total, okTotal := sum(ranks, func(r load.Rank) load.Value { return r.KVTotalBlocks })
	if !okUsed || !okTotal || total <= 0 {
		return 0, false
	}
	return float64(used) / float64(total), true
}

func appendGauge(dst []byte, name, help string, v float64) []byte {
	dst = append(dst, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"+name+" "...)
	dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	return append(dst, '\n')
}
