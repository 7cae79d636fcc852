// Package metrics exposes slotgate's Prometheus metrics on a registry that
// the caller creates; nothing is registered globally.
//
// Invariants:
//
//   - Dynamo 1.5's worker admission metrics keep Dynamo's exact names, types and
//     help strings, with no labels: dynamo_engine_request,
//     dynamo_request_queue and dynamo_rejection_request_total.
//   - Dynamo 1.7's backend admission family (dynamo_backend_admission_*)
//     is exported beside them with Dynamo's names, types and help
//     strings. Its labels are Dynamo's (admit_total{source}) or those of
//     Dynamo PR #14369 (rejection_total{reason}, dequeue_total{source}),
//     every series exists from the start, and receive_total is always the
//     sum of admit_total, rejection_total and cancellation_total. Three
//     of its gauges end in _count, against promlint, because Dynamo's
//     names do.
//   - Limiter state is read once per scrape, from one limiter.Stats
//     snapshot, so the gauges of one scrape agree with each other and the
//     request path never waits for a scrape.
//   - Every series of slotgate_requests_total (each outcome of each class
//     by each protocol, http and grpc alike) exists from the start, at 0,
//     so rate() reads as quiet rather than as a gap. The dynamo_* metrics
//     count both protocols together, under Dynamo's names and labels.
//   - slotgate_prefill_tokens and slotgate_queued_tokens are the limiters'
//     prompt tokens in prefill and in the queue, all ranks together, from
//     the same limiter.Stats as the other gauges; they read 0 while no
//     token limit is set, since tokens are not counted then.
//   - Everything else passes client_golang's promlint.
package metrics
