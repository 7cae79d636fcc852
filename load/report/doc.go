// Package report is the worker's load as slotgate publishes it: the
// Snapshot type, one numbered view of the engine's KV cache and prefill
// load per data-parallel rank, slotgate's admission state and the busy
// verdict, and the Hub that publishes snapshots to any number of
// watchers. The JSON form and the Server-Sent Events stream are rendered
// here, with the rule of ORCA's utilization (Snapshot.Utilization); the
// gRPC service is package load/loadgrpc, the ORCA reports (gRPC and the
// HTTP header) package load/orcagrpc, and the snapshot is computed by
// package load/merge.
//
// Frontends import this package to read snapshots (see load/watch), so
// it depends on the standard library only.
//
// Invariants, each checked by the tests:
//
//   - Every count says where it came from (engine, static, slotgate) or is
//     unknown, which is never the same as 0. kv_used_blocks is the
//     engine's only: slotgate's estimate goes in active_decode_blocks and
//     never overwrites the engine's occupancy (Dynamo #7753).
//   - Snapshots are immutable once published and numbered: Seq increases
//     by one with each, so a watcher can tell a missed one.
//   - A change is published within MinInterval (10 ms) of happening and
//     never more often than that; when nothing changes a heartbeat is
//     published every Heartbeat (1 s), so silence always means trouble.
//   - Every snapshot a Hub publishes carries the same Epoch, a random
//     non-zero boot id drawn when the Hub is made (one Hub per process),
//     and the same TTL, three heartbeats unless set: a reader that sees
//     the Epoch change drops what it knew of the worker, and one that
//     has nothing newer after At+TTL takes the worker as gone.
//   - An engine that stops answering makes the snapshot Stale; slotgate's
//     own fields and the heartbeat keep flowing, and a stale engine value
//     never decides busy.
//   - Requests' token counts (prompt tokens in prefill and queued) are
//     the limiters', which count an HTTP request's tokens only while a
//     token limit is in force: without one they are 0, not unknown.
package report
