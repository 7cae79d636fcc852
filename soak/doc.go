// Package soak is slotgate's chaos soak: it runs the real slotgate and
// enginesim binaries on 127.0.0.1, drives a seeded mix of clients through
// slotgate (streaming and plain HTTP chat completions, gRPC Generate
// streams, clients that abort at random moments or read slowly, retries
// after 529 and 503), changes N and the engine's injected faults while it
// runs, kills and restarts the engine, and checks slotgate's invariants
// throughout and at the end:
//
//   - the engine never runs more requests at once than the largest N in
//     force since it started (enginesim's exact peak, HTTP and gRPC
//     sharing the slots);
//   - slotgate's queue never holds more than Q, and the requests clients
//     see admitted and not ended never exceed that N plus Q;
//   - every request sent ends exactly once: its access-log line is there
//     once, agrees with what its client saw, and the access log's counts
//     per outcome equal slotgate_requests_total;
//   - at the end the gauges read zero, goroutines and open files are back
//     near their baseline, and N+Q long requests are admitted in full
//     while the next one is refused with 529.
//
// Run drives a soak and returns its Report; the checks that need no
// process (Check, CheckCounts, CheckGRPCCounts) are exported so that they
// can be tested on inputs that break them. Everything is bounded: each
// request by its own deadline, the soak by its duration or request count,
// every wait by a timeout.
package soak
