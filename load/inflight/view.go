package inflight

import (
	"slices"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/estimate"
)

// sums is one rank's share of the flights while View adds them up.
type sums struct {
	flights, prefillTokens, decodeBlocks int64
}

// View returns slotgate's load on each of ranks (DP rank ids, in any
// order; the result follows it), with blocks of blockSize tokens. With no
// ranks it returns one for rank 0.
//
// Each Rank carries, with SourceSlotgate, Flights, ActivePrefillTokens
// (the prompts of the flights still waiting for their first token) and
// ActiveDecodeBlocks (the blocks their prompt and generated tokens fill);
// ActiveDecodeBlocks is unknown when the block size is (blockSize <= 0),
// never a false 0. Every other value is unknown: only the engine knows it.
func (t *Tracker) View(ranks []int, blockSize int) []load.Rank {
	if len(ranks) == 0 {
		ranks = []int{0}
	}
	t.blockSize.Store(int64(blockSize))
	perRank := make([]sums, len(ranks))
	var spread sums
	t.mu.Lock()
	for f := range t.flights {
		dst := &spread
		if i := slices.Index(ranks, f.rank); f.rank != Unpinned && i >= 0 {
			dst = &perRank[i]
		}
		f.addTo(dst, blockSize)
	}
	t.mu.Unlock()
	spreadOver(perRank, spread)
	out := make([]load.Rank, len(ranks))
	for i, id := range ranks {
		out[i] = perRank[i].rank(id, blockSize > 0)
	}
	return out
}

// rank is s as the load of rank id; knowBlocks is whether the block size,
// and so the decode blocks, is known.
func (s sums) rank(id int, knowBlocks bool) load.Rank {
	own := func(n int64) load.Value { return load.Value{N: n, Source: load.SourceSlotgate} }
	r := load.Rank{DPRank: id, Flights: own(s.flights), ActivePrefillTokens: own(s.prefillTokens)}
	if knowBlocks {
		r.ActiveDecodeBlocks = own(s.decodeBlocks)
	}
	return r
}

// addTo adds f's load to dst; the caller holds the lock.
func (f *Flight) addTo(dst *sums, blockSize int) {
	dst.flights++
	if !f.prefilled {
		dst.prefillTokens += int64(f.prompt)
	}
	dst.decodeBlocks += int64(estimate.Blocks(f.prompt+f.generated, blockSize))
}

// spreadOver adds s evenly to the ranks, the remainder one each to the
// first ones, so the totals stay exact.
func spreadOver(ranks []sums, s sums) {
	n := int64(len(ranks))
	share := func(total int64, i int) int64 {
		v := total / n
		if int64(i) < total%n {
			v++
		}
		return v
	}
	for i := range ranks {
		ranks[i].flights += share(s.flights, i)
		ranks[i].prefillTokens += share(s.prefillTokens, i)
		ranks[i].decodeBlocks += share(s.decodeBlocks, i)
	}
}
