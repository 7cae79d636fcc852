package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// sglangMetrics are SGLang's SchedulerMetricsCollector gauges and counters
// that describe load (python/sglang/srt/observability/metrics_collector.py),
// with labels model_name, engine_type, tp_rank, pp_rank and dp_rank. KV
// capacity is given both ways llm-d versions read it: the plain gauges
// sglang:page_size and sglang:num_pages, and the info gauge
// sglang:cache_config_info{page_size,num_pages}.
func sglangMetrics(model string, o Options) []metricDef {
	labels := []string{"dp_rank"}
	constLabels := prometheus.Labels{"model_name": model, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, constLabels)
	}
	pages := o.NumGPUBlocks - 1
	info := prometheus.Labels{"page_size": strconv.Itoa(o.BlockSize), "num_pages": strconv.Itoa(pages)}
	for k, v := range constLabels {
		info[k] = v
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	f := func(v func(RankStats) int) func(RankStats) []sample {
		return one(func(s RankStats) float64 { return float64(v(s)) })
	}
	return []metricDef{
		{desc("sglang:num_running_reqs", "The number of running requests."), gauge, f(func(s RankStats) int { return s.Running })},
		{desc("sglang:num_queue_reqs", "The number of requests in the waiting queue."), gauge, f(func(s RankStats) int { return s.Waiting })},
		{desc("sglang:num_retracted_reqs", "The number of retracted requests."), gauge, f(func(s RankStats) int { return s.Preempted })},
		{desc("sglang:num_used_tokens", "The number of used tokens."), gauge,
			f(func(s RankStats) int { return s.UsedBlocks * s.BlockSize })},
		{desc("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool."), gauge,
			f(func(s RankStats) int { return s.UsableBlocks * s.BlockSize })},
		{desc("sglang:token_usage", "The token usage."), gauge, one(RankStats.KVUsage)},
		{desc("sglang:page_size", "The KV cache page size in tokens."), gauge, f(func(s RankStats) int { return s.BlockSize })},
		{desc("sglang:num_pages", "The number of KV cache pages."), gauge, f(func(s RankStats) int { return s.UsableBlocks })},
		{desc("sglang:context_len", "The context length of the model."), gauge, f(func(RankStats) int { return o.MaxModelLen })},
		{desc("sglang:gen_throughput", "The generation throughput (token/s)."), gauge,
			one(func(s RankStats) float64 { return s.GenThroughput })},
		{desc("sglang:cache_hit_rate", "The prefix cache hit rate."), gauge, one(func(RankStats) float64 { return 0 })},
		{prometheus.NewDesc("sglang:cache_config_info", "KV cache configuration.", labels, info), gauge, one(always1)},
		{desc("sglang:prompt_tokens_total", "Number of prefill tokens processed."), counter,
			one(func(s RankStats) float64 { return float64(s.PromptTokens) })},
		{desc("sglang:generation_tokens_total", "Number of generation tokens processed."), counter,
			one(func(s RankStats) float64 { return float64(s.GenerationTokens) })},
	}
}
