package inflight

import (
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

// New returns an empty Tracker. onChange, when not nil, is called after
// every change to what View reports, outside the Tracker's lock, from the
// goroutine that made the change (the proxy's, on the request path): it
// must not block.
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
