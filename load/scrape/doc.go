// Package scrape knows an inference engine's load by scraping it: per
// data-parallel (DP) rank, the KV cache blocks in use and in total, the
// running and waiting requests, the prefill tokens pending, the block size
// and the token budget per step, as load.Ranks.
//
// Three dialects are parsed, each by a pure function of the response body:
// vLLM's Prometheus text (ParseVLLM), SGLang's /v1/loads JSON (ParseSGLang)
// and TensorRT-LLM's JSON iteration stats (ParseTRTLLM). A Scraper polls
// the engine with one of them, or detects which one answers (DialectAuto),
// fills what the engine does not export from static Overrides, and keeps
// the latest EngineLoad for any number of readers.
//
// TensorRT-LLM's /metrics drains on read: slotgate must be its only
// reader, or the iterations another reader takes are lost to slotgate.
//
// Invariants, each checked by the tests:
//
//   - A value is never guessed: an unknown load.Value is distinct from 0,
//     and every known value says whether it came from the engine or a
//     static override. An override never replaces a value the engine
//     reports. The values only slotgate knows (ActiveDecodeBlocks,
//     Flights) stay unknown here.
//   - Metric names are matched exactly, never by prefix
//     (vllm:num_requests_waiting is not vllm:num_requests_waiting_by_reason).
//   - vLLM's num_gpu_blocks, summed over the DP engines an API server
//     manages, is divided back per rank.
//   - A parser that returns no error returns ranks sorted by DPRank, unique,
//     with every known value non-negative and used ≤ total blocks where
//     both are known; on any input it never panics (fuzzed).
//   - An empty TensorRT-LLM answer keeps the previous values of every
//     rank; a rank missing from one answer keeps its own.
//   - After StaleAfter (3) consecutive failed scrapes the snapshot is Stale,
//     with the values and At of the last success; the first success makes
//     it fresh again. Each change is logged once, not per scrape.
//   - Readers get snapshots: Load returns a copy of an immutable
//     EngineLoad held in an atomic.Pointer, replaced whole after each
//     scrape, stamped with the time of the last success.
//   - With Options.KeepExposition, Exposition returns the engine's
//     Prometheus text of the latest successful scrape (vLLM's parsed
//     /metrics; SGLang's /metrics, read after /v1/loads), byte for byte,
//     never modified once stored, with the same staleness rule; a body
//     that does not parse is never kept. Without it nothing is kept.
//   - Options.OnChange is called after every scrape that stored a
//     snapshot, and only from Run's goroutine.
//
// Concurrency: Run is the only goroutine that scrapes; it starts nothing
// that outlives it, and every scrape ends with Run's context. New starts
// nothing. Load is safe from any goroutine.
//
// The package imports the standard library, the load vocabulary,
// prometheus/common/expfmt and prometheus/client_model only (see the
// module's deps_test.go). It is kept apart from package load so that the
// packages that only speak load's vocabulary (load/inflight, load/busy)
// stay free of the Prometheus parser.
package scrape
