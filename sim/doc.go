// Package sim is enginesim's simulated LLM inference engine and its
// OpenAI-compatible HTTP server. It lets slotgate be tried, tested and
// benchmarked without a GPU, as NVIDIA Dynamo's mocker does.
//
// The engine (Engine) models vLLM's V1 scheduler, one per data-parallel
// rank: a FIFO waiting queue, at most MaxNumSeqs running requests, a paged
// KV pool of NumGPUBlocks blocks of BlockSize tokens, chunked prefill
// bounded by MaxNumBatchedTokens tokens per step, and LIFO preemption with
// recomputation when decode runs out of blocks. Step times come from the
// mocker's polynomial model (perf.go), divided by SpeedupRatio.
//
// The server (NewHandler) speaks OpenAI's completions and chat completions,
// streaming and not, and reports load as vLLM, SGLang or TensorRT-LLM would
// (Dialect), plus enginesim's own gauges (OwnMetricsPath).
//
// For chaos tests, Faults injects faults into generation requests over
// both APIs (connection resets, errors, stalls, slow first tokens,
// answers that never end), set at start and replaced at run time through
// the HTTP admin call at FaultsPath.
//
// The gRPC service (NewGRPCService) serves the subset of vLLM's
// vllm.grpc.engine.VllmEngine in protos/vllm/grpc/engine (Generate, a
// token stream; HealthCheck; Abort) and grpc.health.v1. Its requests go to
// the same Engine as the HTTP API's, so they share its scheduler and
// counts, the count before the first token included.
//
// Invariants, each checked by the tests:
//
//   - Per rank, the blocks held by running requests never exceed the usable
//     pool (NumGPUBlocks − 1: block 0 is vLLM's null block), and waiting
//     requests hold none.
//   - Per rank, running never exceeds MaxNumSeqs, and running + waiting never
//     exceeds MaxNumQueuedReqs when that is set: Submit refuses with
//     ErrQueueFull instead.
//   - The tokens scheduled in one step never exceed MaxNumBatchedTokens.
//   - Waiting requests are admitted in FIFO order; a preempted request goes
//     back to the head of the queue, its blocks freed and its tokens
//     recomputed on readmission.
//   - A request is admitted only when the blocks for its whole known sequence
//     (prompt, plus the output so far after a preemption) fit.
//   - Handle.Close of an unfinished request removes it at once, running or
//     waiting, and frees its blocks before returning.
//   - Every request ends exactly once: finished (length or stop), aborted, or
//     failed with ErrStopped when Run returns.
//   - Per rank, the count of requests before their first token (Stats,
//     firsttoken.go) equals its running and waiting requests that have no
//     output token yet; it and the engine-wide count change under a lock at
//     each transition, so their high-water marks are exact.
//   - Token counts and generated text depend only on the input and the seed.
//   - A generation request, HTTP or gRPC, counts in flight (Stats.InFlight)
//     from its handler's start until the handler returns or its context is
//     done, whichever comes first, and leaves the count exactly once; the
//     peak changes under the same lock, so it is exact.
//   - Each valid generation request draws at most one fault (fault.go),
//     one uniform number from a generator seeded with the seed, so the
//     faults depend only on the seed and the order of arrivals. A request
//     that faults frees its sequence and blocks as a cancelled one does: an
//     injected error is never submitted, anything else is closed when its
//     handler returns.
//
// Concurrency: each rank's state is guarded by its own mutex; its scheduling
// loop is one goroutine, started by Engine.Run and ended with Run's context.
// Nothing in this package starts a goroutine that outlives the call that
// started it, and nothing is package-level mutable state.
package sim
