package inflight_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/inflight"
)

// own is a count of slotgate's.
func own(n int64) load.Value { return load.Value{N: n, Source: load.SourceSlotgate} }

// rank is the load View reports for a rank with the block size known.
func rank(dp int, flights, prefillTokens, decodeBlocks int64) load.Rank {
	return load.Rank{
		DPRank: dp, Flights: own(flights), ActivePrefillTokens: own(prefillTokens), ActiveDecodeBlocks: own(decodeBlocks),
	}
}

func TestFlightLifecycle(t *testing.T) {
	var changes atomic.Int64
	tr := inflight.New(func() { changes.Add(1) })
	f := tr.Begin(inflight.Unpinned)
	f.SetPrompt(100) // 100 tokens: 7 blocks of 16
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 1, 100, 7)})

	f.SetGenerated(1) // first token: prefill over, 101 tokens still 7 blocks
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 1, 0, 7)})
	f.SetGenerated(13) // 113 tokens: 8 blocks
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 1, 0, 8)})
	// Unknown block size: decode blocks unknown, not 0.
	assertView(t, tr, []int{0}, 0, []load.Rank{{DPRank: 0, Flights: own(1), ActivePrefillTokens: own(0)}})

	f.End()
	f.End()
	f.SetPrompt(5000) // after End: no effect
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 0, 0, 0)})
	if got := changes.Load(); got != 5 { // begin, prompt, first token, generated, end
		t.Errorf("onChange called %d times, want 5", got)
	}
	if tr.Len() != 0 {
		t.Errorf("Len = %d after End, want 0", tr.Len())
	}
}

func TestPrefilledWithoutTokens(t *testing.T) {
	tr := inflight.New(nil)
	f := tr.Begin(0)
	f.SetPrompt(50)
	f.Prefilled() // e.g. the engine answered an error
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 1, 0, 4)})
}

func TestViewSpreadsUnpinnedAndKeepsPinned(t *testing.T) {
	tr := inflight.New(nil)
	pinned := tr.Begin(1)
	pinned.SetPrompt(10)
	for _, p := range []int{7, 7, 7} { // 21 prefill tokens, 3 flights, 3 blocks of 8 (1 each)
		tr.Begin(inflight.Unpinned).SetPrompt(p)
	}
	stray := tr.Begin(9) // a rank the engine does not report: spread
	stray.SetPrompt(1)
	got := tr.View([]int{0, 1}, 8)
	want := []load.Rank{
		rank(0, 2, 11, 2),
		rank(1, 3, 10+11, 2+2),
	}
	// Totals: 4 spread flights (2+2), 22 spread tokens (11+11), 4 spread
	// blocks (2+2), plus the pinned flight's 10 tokens in 2 blocks.
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rank %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestViewRemainderGoesToFirstRanks(t *testing.T) {
	tr := inflight.New(nil)
	tr.Begin(inflight.Unpinned).SetPrompt(5)
	got := tr.View([]int{0, 1, 2}, 0)
	var sum int64
	for _, r := range got {
		sum += r.ActivePrefillTokens.N
	}
	if sum != 5 || got[0].ActivePrefillTokens.N != 2 || got[1].ActivePrefillTokens.N != 2 || got[2].ActivePrefillTokens.N != 1 {
		t.Errorf("5 tokens over 3 ranks = %+v, want 2, 2, 1", got)
	}
}

func TestViewWithNoRanksIsRankZero(t *testing.T) {
	tr := inflight.New(nil)
	tr.Begin(inflight.Unpinned)
	got := tr.View(nil, 16)
	if len(got) != 1 || got[0].DPRank != 0 || got[0].Flights != own(1) {
		t.Errorf("View(nil) = %+v, want one rank 0 with the flight", got)
	}
}

func TestConcurrentFlights(t *testing.T) {
	tr := inflight.New(nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			f := tr.Begin(i % 3)
			f.SetPrompt(i)
			_ = tr.View([]int{0, 1, 2}, 16)
			f.SetGenerated(i)
			f.End()
		})
	}
	wg.Wait()
	if tr.Len() != 0 {
		t.Errorf("Len = %d after every flight ended", tr.Len())
	}
}

func assertView(t *testing.T, tr *inflight.Tracker, ranks []int, blockSize int, want []load.Rank) {
	t.Helper()
	got := tr.View(ranks, blockSize)
	if len(got) != len(want) {
		t.Fatalf("View = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("View[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestTokensWithinABlockDoNotNotify: one notification per new block, not
// per token, once View has said the block size.
func TestTokensWithinABlockDoNotNotify(t *testing.T) {
	var changes atomic.Int64
	tr := inflight.New(func() { changes.Add(1) })
	_ = tr.View(nil, 16)
	f := tr.Begin(inflight.Unpinned)
	f.SetPrompt(16) // one full block
	f.SetGenerated(1)
	before := changes.Load()
	for n := 2; n <= 48; n++ { // blocks 2, 3 and 4 start at 17, 33 and 49 tokens: 2 new blocks
		f.SetGenerated(n)
	}
	if got := changes.Load() - before; got != 2 {
		t.Errorf("%d notifications for 47 tokens over 2 new blocks, want 2", got)
	}
	assertView(t, tr, []int{0}, 16, []load.Rank{rank(0, 1, 0, 4)})
}
