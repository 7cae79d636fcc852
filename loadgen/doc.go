// Package loadgen is slotgate's load generator. It sends OpenAI-style
// completion requests (/v1/completions or /v1/chat/completions) to slotgate
// or directly to an engine, or, through an Options.Sender, requests of
// another protocol (loadgen/grpcload: vLLM's gRPC Generate), and measures
// what the users of an LLM service measure: the answer's status, time to
// first token (TTFT), inter-token latency (ITL), end-to-end latency (E2E)
// and token throughput. The package itself is the standard library only:
// a protocol with other dependencies lives in a Sender of its own package.
//
// Two load shapes:
//
//   - closed loop: Concurrency workers, each sending its next request as
//     soon as its previous one ended;
//   - open loop: Poisson arrivals at Rate per second (exponential gaps drawn
//     from a PRNG seeded with Seed), each sent at once on its own goroutine,
//     unless MaxOutstanding requests are already in flight: then the arrival
//     is dropped and counted, never sent.
//
// Each request ends with exactly one outcome, its key in Report.ByStatus:
//
//   - the status: an HTTP status, such as "200", "529", "503" or "429", or
//     a gRPC code name, such as "OK", "RESOURCE_EXHAUSTED" or "UNAVAILABLE";
//   - "error": no answer (refused, reset, malformed), or the body failed;
//   - "timeout": Options.Timeout passed first;
//   - "cancelled": still in flight when the drain timeout passed;
//   - "stream_error": a success (2xx) whose stream carried an error event;
//   - "bad_response": a success whose content was not what the protocol
//     says (JSON that does not parse, a gRPC stream without its end).
//
// A request succeeds when it ends with a success status (HTTP 2xx, gRPC OK)
// and complete content; only successful requests give latency samples and
// count in the throughput. Any other status is a refusal.
//
// Invariants:
//
//   - A run stops issuing requests when Requests were issued (in the open
//     loop: arrivals, drops included), when Duration passed, or when the
//     caller's context ended, whichever comes first. In-flight requests are
//     then awaited up to DrainTimeout, then cancelled ("cancelled").
//   - Every request sent has exactly one outcome: Sent is the sum of
//     ByStatus, and dropped arrivals are in Dropped, not in Sent.
//   - Closed loop: never more than Concurrency requests in flight. Open
//     loop: never more than MaxOutstanding.
//   - Percentiles are exact: nearest rank over every recorded sample, sorted;
//     no histogram, no sampling.
//   - Request i's prompt length, output length and prompt text depend on
//     Seed and i alone; the open loop's arrival times depend on Seed and Rate
//     alone. Two runs with one seed send the same requests.
//   - Run owns every goroutine it starts and returns only after all of them
//     ended, with the HTTP client's idle connections closed.
package loadgen
