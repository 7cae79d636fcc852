// Package report merges what slotgate knows about its worker's load into
// one Snapshot and publishes it: the engine's scraped values (package
// load), slotgate's own view of the requests in flight (package
// load/inflight), the limiter's state, and the busy verdict under the
// thresholds in force (package load/busy).
//
// A Hub computes snapshots and hands them to any number of watchers; the
// JSON form, the Server-Sent Events stream and the ORCA header are
// rendered here, the gRPC service elsewhere (package load/loadgrpc).
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
//   - An engine that stops answering makes the snapshot Stale; slotgate's
//     own fields and the heartbeat keep flowing, and a stale engine value
//     never decides busy.
package report
