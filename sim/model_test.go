package sim

import (
	"math/rand/v2"
	"testing"
)

// TestRandomizedInvariants drives ranks with random submissions, closes
// and steps, and checks the scheduler's invariants after every operation:
// blocks never over-allocated and held only by running requests, running
// never above max-num-seqs, no step above max-num-batched-tokens, closed
// requests freed at once; at the end every request that was not closed
// produced exactly its output and the pool is empty.
func TestRandomizedInvariants(t *testing.T) {
	for seed := range uint64(40) {
		t.Run("", func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed*7+1))
			opts := Options{
				NumGPUBlocks: 2 + rng.IntN(30), BlockSize: 1 + rng.IntN(16),
				MaxNumSeqs: 1 + rng.IntN(6), MaxNumQueuedReqs: rng.IntN(12),
			}
			opts.MaxNumBatchedTokens = opts.MaxNumSeqs + rng.IntN(64)
			opts.MaxModelLen = max(2, (opts.NumGPUBlocks-1)*opts.BlockSize)
			e := newEngine(t, opts)
			r := e.ranks[0]
			var live []*Handle
			closed := map[*Handle]bool{}
			for op := 0; op < 400; op++ {
				switch k := rng.IntN(10); {
				case k < 3:
					prompt := 1 + rng.IntN(opts.MaxModelLen-1)
					req := Request{PromptTokens: prompt, MaxTokens: 1 + rng.IntN(opts.MaxModelLen-prompt), IgnoreEOS: rng.IntN(2) == 0, Key: rng.Uint64()}
					if h, err := e.Submit(req); err == nil {
						live = append(live, h)
						t.Cleanup(h.Close)
					} else if err != ErrQueueFull {
						t.Fatalf("Submit(%+v): %v", req, err)
					}
				case k < 4 && len(live) > 0:
					h := live[rng.IntN(len(live))]
					before := r.stats().UsedBlocks
					held := heldBlocks(r, h.s)
					h.Close()
					closed[h] = true
					if after := r.stats().UsedBlocks; after != before-held {
						t.Fatalf("Close freed %d blocks, the request held %d", before-after, held)
					}
				default:
					if st := stepOnce(r); st != nil && st.tokens() > opts.MaxNumBatchedTokens {
						t.Fatalf("a step computed %d tokens, budget %d", st.tokens(), opts.MaxNumBatchedTokens)
					}
				}
				checkInvariants(t, r)
			}
			for stepOnce(r) != nil {
				checkInvariants(t, r)
			}
			for _, h := range live {
				if closed[h] {
					continue
				}
				if h.s.state != stateFinished || h.s.output != h.s.target || h.s.finish != FinishReason(h.s.target, h.s.limit) {
					t.Fatalf("request ended in state %d with %d of %d tokens, finish %q", h.s.state, h.s.output, h.s.target, h.s.finish)
				}
			}
			if s := r.stats(); s.UsedBlocks != 0 || s.Running != 0 || s.Waiting != 0 {
				t.Fatalf("after draining: %+v", s)
			}
		})
	}
}

func heldBlocks(r *rank, s *seq) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.blocks
}
