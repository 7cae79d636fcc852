// Package merge computes the sidecar's load snapshot (report.Snapshot)
// from its sources: the engine's scraped values and the static overrides
// (load/scrape), slotgate's own count of its flights (load/inflight), the
// limiters' state, and the busy verdict (load/busy).
//
// The engine's ranks and slotgate's view arrive in the one shape the load
// packages share (load.Rank); merge combines them into one load.Rank per
// rank, hands those to the busy rule, and converts them to report's wire
// form. That conversion (wire.go) is the only one between the two shapes.
//
// It is kept apart from package report so that frontends, which import
// report's wire types to read snapshots, do not pull in the scraper and
// its Prometheus parser.
//
// Invariants, each checked by the tests:
//
//   - Every count says where it came from, or is unknown. kv_used_blocks
//     and the running and waiting counts are the engine's only: a static
//     override or slotgate's estimate never stands in for them.
//   - active_prefill_tokens is the engine's while it exports it and is
//     fresh, else slotgate's; active_decode_blocks is slotgate's, unknown
//     without a block size.
//   - There is always at least one rank (rank 0 when the engine reports
//     none), and the ranks follow the engine's order.
//   - A stale engine value never reaches the busy rule.
package merge
