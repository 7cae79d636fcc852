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
//   - "deadline": Options.Deadline passed first;
//   - "cancelled": still in flight when the drain timeout passed;
//   - "stream_error": a success (2xx) whose stream carried an error event;
//   - "bad_response": a success whose content was not what the protocol
//     says (JSON that does not parse, a gRPC stream without its end).
//
// A request succeeds when it ends with a success status (HTTP 2xx, gRPC OK)
// and complete content; only successful requests give latency samples and
// count in the throughput. Any other status is a refusal.
//
// Retries (Options.Retry, Options.Deadline), as the OpenAI SDKs retry: a
// request is tried up to Retry times, the first included, while it is
// refused before any answer came to keep: HTTP 429, 503 or 529, gRPC
// RESOURCE_EXHAUSTED or UNAVAILABLE, or a connection that failed before
// the response head (ErrUnanswered). Before each retry it waits the
// refusal's Retry-After (delay-seconds or an HTTP date, honoured from above
// 0 to 60 s), else min(0.5 s × 2ⁿ, 8 s) for retry n from 0, less a jitter
// of up to a quarter drawn from a PRNG seeded with Seed and the request's
// index. Deadline bounds all the tries and waits, counted from the first
// send: a request still in flight then ends as "deadline", and a wait that
// would end at or after it is not begun: the request gives up at once,
// with its last refusal as its outcome. The closed loop's worker waits
// through its request's retries; in the open loop they happen on the
// request's goroutine and count among the MaxOutstanding. A request is
// counted once, in Sent and ByStatus, with its last try's outcome; its
// tries are in Tries, and its latencies count from its first try.
//
// Invariants:
//
//   - A run stops issuing requests when Requests were issued (in the open
//     loop: arrivals, drops included), when Duration passed, or when the
//     caller's context ended, whichever comes first. In-flight requests are
//     then awaited up to DrainTimeout, then cancelled ("cancelled").
//   - Every request sent has exactly one outcome: Sent is the sum of
//     ByStatus, and dropped arrivals are in Dropped, not in Sent. Retries
//     is Tries − Sent; TimedOut is ByStatus["deadline"]; GaveUp counts
//     the requests that ended on a refusal worth a retry; OKFirstTry
//     counts the successful requests that took one try.
//   - No request waits or runs past its Deadline, nor tries more than
//     Retry times.
//   - Closed loop: never more than Concurrency requests in flight. Open
//     loop: never more than MaxOutstanding.
//   - Percentiles are exact: nearest rank over every recorded sample, sorted;
//     no histogram, no sampling.
//   - Request i's prompt length, output length, prompt text and backoff
//     jitter depend on Seed and i alone; the open loop's arrival times
//     depend on Seed and Rate alone. Two runs with one seed send the same
//     requests.
//   - Run owns every goroutine it starts and returns only after all of them
//     ended, with the HTTP client's idle connections closed.
package loadgen
