// Package loadgrpc serves the worker's load (package load/report) over
// gRPC: the LoadReporter service of protos/slotgate/load/v1, on
// slotgate's admin side, for the frontends that route on it. It is the
// gRPC twin of report's GET /v1/load and its Server-Sent Events stream:
// the same snapshots, fields and meanings.
//
// There are two ways to serve it:
//
//   - Serve runs a whole gRPC server on a listener until ctx ends:
//     LoadReporter, the standard health service and reflection. This is
//     what cmd/slotgate wants for its admin side.
//   - NewService and Service.Register add LoadReporter to a grpc.Server of
//     the caller's. The caller calls Service.Shutdown before
//     GracefulStop: watch streams last as long as their clients, so a
//     graceful stop would otherwise wait for every frontend to hang up.
//
// ToProto and FromProto convert between report.Snapshot and loadv1.Load,
// for this package and for clients that watch.
//
// Invariants, each checked by the tests:
//
//   - The wire carries what the Snapshot says: FromProto(ToProto(s)) is
//     the same load as s (report.Snapshot.SameLoad) with the same Seq, At,
//     Epoch and TTL (a google.protobuf.Duration, unset when 0). Times come back in UTC without a monotonic reading; strings that
//     are not valid UTF-8 come back with U+FFFD in place of the bad bytes,
//     as proto3 strings must be UTF-8.
//   - Unknown is never 0: an unknown count is an unset Count, a threshold
//     that is off is an unset optional field, and an engine never scraped
//     has no scraped_at.
//   - WatchLoad sends the latest snapshot at once and then each one the
//     Source gives, heartbeats included. It converts and sends nothing
//     else, so a slow client skips snapshots (Seq tells how many) and
//     never delays the Hub or the other clients.
//   - A WatchLoad stream ends when its client cancels or its deadline
//     passes (CANCELED, DEADLINE_EXCEEDED), when a Send fails, at Shutdown
//     or when the Hub stops (UNAVAILABLE). Its handler leaves no goroutine
//     behind, and Serve's goroutines have all ended when it returns.
package loadgrpc
