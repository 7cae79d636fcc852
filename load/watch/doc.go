// Package watch tracks the load that many slotgate sidecars publish, for a
// frontend (router, endpoint picker, gateway) that chooses among their
// workers.
//
// A Watcher follows each worker's GET /v1/load/stream (package load/report)
// over one long-lived Server-Sent Events connection, keeps the newest
// snapshot, and answers which workers are busy and which are eligible. Run
// owns every goroutine: one per worker, each ending with Run's context or
// with Remove. Everything else is safe from any goroutine, at any time.
//
// Invariants, each checked by the tests:
//
//   - Silence is never trusted. A worker with no new snapshot for Expiry (3 s
//     by default: three sidecar heartbeats) is Expired, and an expired worker
//     is never eligible nor busy, whatever its last snapshot said: no mark
//     outlives its evidence (Dynamo #12138, #10564). Expiry is judged on
//     every read, and also actively, so that Changed fires when it happens;
//     the silent connection is then dropped and reopened.
//   - Only new snapshots are evidence. A snapshot replayed on reconnect (same
//     Seq, same At) does not refresh a worker, so a sidecar whose publisher
//     died cannot look alive by being reconnected to.
//   - Freshness is measured on the watcher's own clock, from when a snapshot
//     arrived, never from the sidecar's At: clock skew between hosts does not
//     matter.
//   - Newest wins. On one connection Seq must increase; an older or repeated
//     snapshot is dropped. The first new snapshot of a new connection may
//     have a lower Seq (or the same, with another At): the sidecar
//     restarted, and its word is taken.
//   - Eligible means Fresh and not busy. When no candidate is eligible,
//     Eligible returns an empty list: the watcher never pretends, and the
//     caller decides whether to fall back (Dynamo answers 529 then).
//   - Changed fires when Busy or Eligible may have changed (a worker turning
//     Fresh, Expired, busy or idle, or removed), never for a heartbeat.
//   - Reconnects back off exponentially with jitter, from BackoffMin to
//     BackoffMax, and start again from BackoffMin after a connection that
//     delivered. A worker's state changes are logged once each (connected,
//     disconnected, unreachable, expired, restarted), never each retry.
//   - Input is bounded. A line, or one event's data, over 1 MiB ends the
//     connection with the error logged; the parser never panics (fuzzed).
package watch
