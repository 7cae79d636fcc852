package inflight

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/slotgate/slotgate/load/estimate"
)

// Unpinned is the rank of a flight that the engine may run on any rank.
const Unpinned = -1

// Tracker sums the flights in progress.
type Tracker struct {
	onChange func()
	// blockSize is the last block size View was asked for: a generated
	// token that fills no new block changes nothing View reports, and is
	// not worth a notification (one per token would be a storm).
	blockSize atomic.Int64

	mu      sync.Mutex
	flights map[*Flight]struct{}
}

// Flight is one admitted request, from its slot to the slot's release.
type Flight struct {
	t    *Tracker
	rank int

	// Guarded by t.mu.
	prompt    int
	generated int
	prefilled bool
	ended     bool
}

// New returns an empty Tracker; onChange, when not nil, is called after
// every change, outside the Tracker's lock. It must not block.
func New(onChange func()) *Tracker {
	if onChange == nil {
		onChange = func() {}
	}
	return &Tracker{onChange: onChange, flights: make(map[*Flight]struct{})}
}

// Begin starts a flight on rank (Unpinned when the engine chooses).
func (t *Tracker) Begin(rank int) *Flight {
	f := &Flight{t: t, rank: rank}
	t.mu.Lock()
	t.flights[f] = struct{}{}
	t.mu.Unlock()
	t.onChange()
	return f
}

// Len returns the number of flights in progress.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.flights)
}

// update applies change to f under the lock unless f has ended, and
// reports the change when change says something changed.
func (f *Flight) update(change func() bool) {
	f.t.mu.Lock()
	changed := !f.ended && change()
	f.t.mu.Unlock()
	if changed {
		f.t.onChange()
	}
}

// SetPrompt sets the prompt's size in tokens, once the body is known.
func (f *Flight) SetPrompt(tokens int) {
	f.update(func() bool {
		old := f.prompt
		f.prompt = max(tokens, 0)
		return f.prompt != old
	})
}

// SetGenerated sets the tokens generated so far; n > 0 also ends the
// prefill. It notifies only when that changes what View reports: the
// prefill's end, or a new KV block at the last block size View used.
func (f *Flight) SetGenerated(n int) {
	bs := int(f.t.blockSize.Load())
	f.update(func() bool {
		old, wasPrefilled := f.generated, f.prefilled
		f.generated = max(n, 0)
		f.prefilled = f.prefilled || n > 0
		newBlock := estimate.Blocks(f.prompt+old, bs) != estimate.Blocks(f.prompt+f.generated, bs)
		return f.prefilled != wasPrefilled || newBlock
	})
}

// Prefilled ends the prefill: the first token arrived, or the engine
// answered without generating anything (an error).
func (f *Flight) Prefilled() {
	f.update(func() bool {
		was := f.prefilled
		f.prefilled = true
		return !was
	})
}

// End removes the flight. It is idempotent.
func (f *Flight) End() {
	f.t.mu.Lock()
	ended := f.ended
	f.ended = true
	delete(f.t.flights, f)
	f.t.mu.Unlock()
	if !ended {
		f.t.onChange()
	}
}

// RankLoad is slotgate's view of one rank.
type RankLoad struct {
	DPRank int
	// Flights counts the flights on the rank; unpinned flights are
	// spread, so it is a share, not always a whole request.
	Flights int64
	// PrefillTokens is the prompt tokens of the flights still waiting for
	// their first token.
	PrefillTokens int64
	// DecodeBlocks is the KV blocks the flights' tokens fill; 0 when the
	// block size is unknown (blockSize <= 0).
	DecodeBlocks int64
}

// View returns the load of each of ranks (DP rank ids, in any order;
// the result follows it), with blocks of blockSize tokens. With no ranks
// it returns one for rank 0.
func (t *Tracker) View(ranks []int, blockSize int) []RankLoad {
	if len(ranks) == 0 {
		ranks = []int{0}
	}
	t.blockSize.Store(int64(blockSize))
	out := make([]RankLoad, len(ranks))
	for i, id := range ranks {
		out[i].DPRank = id
	}
	var spread RankLoad
	t.mu.Lock()
	for f := range t.flights {
		dst := &spread
		if i := slices.Index(ranks, f.rank); f.rank != Unpinned && i >= 0 {
			dst = &out[i]
		}
		f.addTo(dst, blockSize)
	}
	t.mu.Unlock()
	spreadOver(out, spread)
	return out
}

// addTo adds f's load to dst; the caller holds the lock.
func (f *Flight) addTo(dst *RankLoad, blockSize int) {
	dst.Flights++
	if !f.prefilled {
		dst.PrefillTokens += int64(f.prompt)
	}
	dst.DecodeBlocks += int64(estimate.Blocks(f.prompt+f.generated, blockSize))
}

// spreadOver adds s evenly to the ranks, the remainder one each to the
// first ones, so the totals stay exact.
func spreadOver(ranks []RankLoad, s RankLoad) {
	n := int64(len(ranks))
	share := func(total int64, i int) int64 {
		v := total / n
		if int64(i) < total%n {
			v++
		}
		return v
	}
	for i := range ranks {
		ranks[i].Flights += share(s.Flights, i)
		ranks[i].PrefillTokens += share(s.PrefillTokens, i)
		ranks[i].DecodeBlocks += share(s.DecodeBlocks, i)
	}
}
