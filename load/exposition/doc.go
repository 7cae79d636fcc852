// Package exposition adjusts an engine's Prometheus text exposition so that
// an endpoint picker scraping the proxy port sees slotgate's queue: the
// engine's waiting gauge (vllm:num_requests_waiting, sglang:num_queue_reqs,
// trtllm_num_requests_waiting) gets slotgate's queued requests added.
//
// It works on the text line by line and never builds a model of the whole
// exposition: a GET /metrics on the proxy port costs one pass over the
// engine's last scrape (about 100 KiB for vLLM), no parser, no
// allocation beyond the answer.
//
// Why the waiting gauge and never the running one: a request slotgate has
// admitted is already inside the engine's own counts (running, or in the
// engine's waiting queue), so adding slotgate's admitted requests would
// count them twice. Only the requests slotgate holds back, in its queue,
// are invisible to the engine; they are waiting in the only sense the
// picker's queue scorer and saturation detector mean.
//
// Which series gets the queue: Gateway API Inference Extension's and
// llm-d's picker read, of the series that match a spec, the one with the
// latest timestamp, which for an exposition without timestamps is the
// first matching series. With one limiter for the engine the whole queue
// goes to the family's first series (the one the picker reads; the sum
// over the series is then the engine's waiting plus the queue). With
// limits per rank, each rank's queue goes to the series whose rank label
// (vLLM's engine, SGLang's dp_rank) names that rank; a series without the
// label is rank 0; a queue for a rank without a series goes to the first
// series. A family with no series at all gets one series of its own.
//
// Pod renders slotgate's own gauges, summed over the ranks, for a picker
// configured to read them (an engineConfigs entry): slotgate_pod_*.
// TRTLLM renders the three gauges a picker reads of TensorRT-LLM from the
// JSON iteration stats slotgate scraped, since TensorRT-LLM's /metrics is
// JSON and drains on read.
//
// Invariants, each checked by the tests (the rewrite is fuzzed):
//
//   - Every line that is not a sample of the adjusted family is copied
//     byte for byte: HELP and TYPE lines, comments, other families (the
//     _by_reason family too: names are matched exactly, never by prefix).
//   - A sample of the family keeps its name, labels (in their order) and
//     timestamp; only its value changes, and only by the queue assigned to
//     it. A value that is not a finite number (NaN, +Inf, -Inf, garbage)
//     is left as it is.
//   - The output of a valid exposition is a valid exposition (legacy name
//     validation, as the picker parses it), and the family's sum grows by
//     exactly the queue (when its values are finite).
//   - No input makes it panic.
//
// The package imports the standard library and the load vocabulary only.
package exposition
