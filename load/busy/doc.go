// Package busy decides whether a worker is busy, by Dynamo's rule
// (KvWorkerMonitor), and serves Dynamo's /busy_threshold admin API to read
// and change the thresholds.
//
// # The rule
//
// Evaluate judges load.Ranks, the shape every load package shares, as
// load/merge combines them from the engine's figures and slotgate's own.
// Thresholds has three optional checks. A data-parallel rank is busy when
// any set check is true; the worker is busy when it has at least one rank
// and every rank is busy:
//
//   - decode: the rank's KV blocks in use > ActiveDecodeBlocks ×
//     kv_total_blocks. The blocks in use are the engine's KVUsedBlocks when
//     known, else slotgate's ActiveDecodeBlocks; with neither, or without a
//     positive kv_total_blocks, there is no decode check.
//   - prefill: ActivePrefillTokens > the absolute threshold.
//   - prefill fraction: ActivePrefillTokens > ActivePrefillTokensFrac ×
//     max_num_batched_tokens, truncated, with DefaultMaxNumBatchedTokens for
//     an unknown budget.
//
// The decode check has hysteresis: a rank it found busy stays busy until
// the blocks in use fall to the limit minus a band of 5% of the limit (at
// least one block), or to 0 when that is lower. This is where slotgate
// departs from Dynamo, whose latch waited for two signals to report low
// and stuck when one of them stopped (ai-dynamo/dynamo#10564).
//
// # Invariants
//
// Each is checked by the tests.
//
//   - With no check set, or no rank, nothing is busy. A busy worker has
//     every rank busy; a busy rank has at least one check true.
//   - An unknown value is never taken for 0: a check whose input is unknown
//     is false. The one default is Dynamo's: DefaultMaxNumBatchedTokens for
//     an unknown token budget.
//   - The decode check reads one signal per evaluation, and its hysteresis
//     compares that signal alone. So it cannot stick: an evaluation whose
//     signal is at or below the clear level, or unknown, finds the rank not
//     busy by decode, whatever the other signal did before.
//   - The hysteresis state is, per rank, one bit: busy by decode at the
//     previous evaluation. A threshold change clears all of it, and a rank
//     missing from an evaluation loses its own.
//   - A Store holds only thresholds that pass Validate. Update is all or
//     nothing, readers get copies, and the Store's onChange is called
//     after each update that alters a value, once it is in force, and
//     only then.
//   - The handler answers every request with application/json: Dynamo's
//     shapes on success, {"error": "..."} otherwise. A refused request
//     changes nothing.
//
// Concurrency: Evaluator, Store and the handler are safe for concurrent
// use. Nothing here starts a goroutine: a change is reported by a plain
// callback, called by the goroutine that made it.
//
// The package imports only the standard library, the load vocabulary and
// internal/jsonapi, the JSON plumbing it shares with the /limits API.
package busy
