package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// vllmMetrics are vLLM V1's PrometheusStatLogger metrics that describe
// load (vllm/v1/metrics/loggers.py), with its names, help and labels:
// engine (the DP rank) and model_name; vllm:cache_config_info has engine
// and the CacheConfig fields instead, num_gpu_blocks summed over the DP
// ranks as vLLM's API server reports it.
func vllmMetrics(model string, o Options) []metricDef {
	labels := []string{"engine"}
	constLabels := prometheus.Labels{"model_name": model}
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(labels, extra...), constLabels)
	}
	cache := prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", labels, prometheus.Labels{
		"block_size":             strconv.Itoa(o.BlockSize),
		"num_gpu_blocks":         strconv.Itoa(o.NumGPUBlocks * o.DataParallelSize),
		"num_cpu_blocks":         "0",
		"cache_dtype":            "auto",
		"enable_prefix_caching":  "False",
		"gpu_memory_utilization": "0.9",
	})
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return []metricDef{
		{desc("vllm:num_requests_running", "Number of requests in model execution batches."), gauge,
			one(func(s RankStats) float64 { return float64(s.Running) })},
		{desc("vllm:num_requests_waiting", "Number of requests waiting to be processed."), gauge,
			one(func(s RankStats) float64 { return float64(s.Waiting) })},
		{desc("vllm:num_requests_waiting_by_reason", "Number of requests waiting, by reason. "+
			"Sum of all reasons equals vllm:num_requests_waiting.", "reason"), gauge,
			func(s RankStats) []sample {
				return []sample{{float64(s.Waiting), []string{"capacity"}}, {0, []string{"deferred"}}}
			}},
		{desc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."), gauge,
			one(RankStats.KVUsage)},
		{cache, gauge, one(always1)},
		{desc("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."), counter,
			one(func(s RankStats) float64 { return float64(s.Preemptions) })},
		{desc("vllm:prompt_tokens_total", "Number of prefill tokens processed."), counter,
			one(func(s RankStats) float64 { return float64(s.PromptTokens) })},
		{desc("vllm:generation_tokens_total", "Number of generation tokens processed."), counter,
			one(func(s RankStats) float64 { return float64(s.GenerationTokens) })},
		{desc("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"), counter,
			func(s RankStats) []sample {
				out := make([]sample, 0, 3)
				for _, r := range []string{FinishStop, FinishLength, FinishAbort} {
					out = append(out, sample{float64(s.Finished[r]), []string{r}})
				}
				return out
			}},
	}
}
