// Package inflight is slotgate's own view of the work its admitted
// requests put on the engine: the prompt tokens still waiting for their
// first generated token (active prefill) and the KV blocks each request's
// prompt and generated tokens fill (active decode blocks).
//
// The proxy begins a Flight when a request gets its slot, tells it the
// prompt's estimated size once the body has passed through, the tokens
// generated as the response streams back, and ends it when the slot is
// released. The Tracker sums the flights per data-parallel rank, and View
// reports the sums as load.Ranks, the shape every load package shares.
//
// Invariants, each checked by the tests:
//
//   - A flight counts from Begin to End and never after: End is
//     idempotent, and calls on an ended flight change nothing.
//   - A flight's prompt counts as prefill until its first token (or its
//     end), and in decode blocks from the moment it is known.
//   - A flight pinned to a rank the engine reports counts on that rank
//     only; the others are spread evenly over the ranks, the remainder
//     on the lowest, so the sums over the ranks are exact.
//   - View's values are slotgate's (load.SourceSlotgate): Flights,
//     ActivePrefillTokens, and ActiveDecodeBlocks, which is unknown
//     rather than 0 without a block size. Every other value is unknown.
//   - Every change to what View reports calls the Tracker's onChange,
//     outside its lock; a generated token that fills no new block (at the
//     block size of the last View) does not.
//
// All methods are safe for concurrent use. The package imports only the
// standard library, the load vocabulary, and load/estimate (for Blocks).
package inflight
