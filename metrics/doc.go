// Package metrics exposes slotgate's Prometheus metrics on a registry that
// the caller creates; nothing is registered globally.
//
// Invariants:
//
//   - Dynamo's worker admission metrics keep Dynamo's exact names, types and
//     help strings, with no labels: dynamo_engine_request,
//     dynamo_request_queue and dynamo_rejection_request_total.
//   - Limiter state is read once per scrape, from one limiter.Stats
//     snapshot, so the gauges of one scrape agree with each other and the
//     request path never waits for a scrape.
//   - Every series of slotgate_requests_total exists from the start, at 0,
//     so rate() reads as quiet rather than as a gap.
//   - Everything passes client_golang's promlint.
package metrics
