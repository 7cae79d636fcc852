// Package load is the vocabulary slotgate's load packages share: a count
// that may be unknown and says where it came from (Value, Source), and
// the load of one data-parallel rank (Rank).
//
// The packages that produce and judge load all speak it: load/scrape
// reads the engine's figures into Ranks, load/inflight counts slotgate's
// own flights into Ranks, load/merge combines the two, and load/busy
// applies the busy rule to the merged Ranks. Only the wire form for
// frontends, load/report, has a shape of its own, and load/merge is the
// one place that converts to it.
//
// Invariants:
//
//   - A value is never guessed: the zero Value is unknown, which is never
//     the same as 0, and every known Value says whether it came from the
//     engine, a static override, or slotgate's own count.
//   - The package holds types only: no state, no goroutine, no I/O.
//
// The package imports nothing, not even the standard library, so that
// every load package may import it, the standard-library-only ones
// included (see the module's deps_test.go).
package load
