// Command slotgate-tokenbench measures what slotgate's prefill-token
// budget (--engine-prefill-token-limit, P) buys short prompts (issue 19).
//
// A seeded open-loop workload, Poisson arrivals of short streamed chat
// prompts with rare huge token-id prompts among them, runs against a
// fresh enginesim and slotgate pair on 127.0.0.1 for each configuration:
// N alone, N and W, N and P, and N, W and P. It reports, per
// configuration, the short prompts' time to first token (p50, p90, p99),
// the huge prompts' (p50, max), how many requests were served, refused,
// timed out at the client's deadline or failed, and the engine's own peak
// of requests before their first token; as a Markdown table on stdout and
// as JSON in --out. With --reps above 1 every figure is the median of the
// runs.
//
// Invariants:
//
//   - Every configuration gets the same requests at the same offsets: the
//     workload is a function of --seed alone.
//   - Every request sent has exactly one outcome (served, refused, timed
//     out, failed): sent is their sum, per class.
//   - Every child process (enginesim, slotgate) runs through
//     internal/childproc, is stopped at the end of its configuration's run
//     and on Ctrl-C, and listens on 127.0.0.1 only.
//   - Every request is bounded by --deadline, so a run ends at most
//     --deadline after its last arrival.
package main
