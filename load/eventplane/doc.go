// Package eventplane publishes the worker's load on Dynamo's event plane,
// so that Dynamo's frontend (its KV router and worker monitor) sees this
// worker's KV occupancy as it sees a Dynamo worker's. It sends one
// ActiveLoad per data-parallel rank over NATS core, on the subject
// namespace.{ns}.component.{comp}.endpoint.{ep}.kv_metrics, wrapped in
// Dynamo's EventEnvelope, both MessagePack maps as rmp_serde's
// to_vec_named writes them. The encoder and the NATS client are written
// here, over the standard library: they send exactly what Dynamo reads and
// nothing else.
//
// Invariants, each checked by the tests:
//
//   - Only worker-owned fields are sent: worker_id, dp_rank and
//     kv_used_blocks. active_decode_blocks and active_prefill_tokens
//     belong to router replicas; a worker that wrote them hid a real 99%
//     occupancy behind a router's 1.3% (Dynamo #7753).
//   - kv_used_blocks is the engine's own count. A rank whose count is
//     unknown (no scrape yet, an engine that does not export it) is not
//     published at all: sending 0 would tell the frontend the rank is
//     empty.
//   - A rank is published when its count changes, at most once per
//     debounce window (20 ms by default), and the window never erases a
//     spike: a count that rose and fell inside one window is published at
//     its peak and then at its latest value (Dynamo #14219 review).
//   - Every known rank is republished every heartbeat (10 s by default)
//     even when nothing changed, so a frontend's stale overload mark is
//     always cleared (Dynamo #12138, #14483).
//   - The proxy is never slowed: the hub's watch callback only records
//     the snapshot; the network work happens in Run's goroutine, whose
//     writes have a bounded deadline.
//   - A lost connection is retried with exponential backoff and jitter,
//     100 ms doubling to 5 s; after a reconnection the latest count of
//     every rank is published before anything else. Nothing older than
//     the latest state is replayed.
//   - Envelope sequence numbers increase by one per message, from 0, as
//     Dynamo's EventPublisher numbers them.
package eventplane
