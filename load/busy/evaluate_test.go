package busy_test

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
)

// rank builds a load.Rank with every value unknown but DPRank.
func rank(dp int) load.Rank { return load.Rank{DPRank: dp} }

// engineKV is a rank whose engine reports used of total blocks.
func engineKV(dp int, used, total int64) load.Rank {
	r := rank(dp)
	r.KVUsedBlocks, r.KVTotalBlocks = known(used), known(total)
	return r
}

// ownKV is a rank with only slotgate's estimate of the blocks in use.
func ownKV(dp int, used, total int64) load.Rank {
	r := rank(dp)
	r.ActiveDecodeBlocks, r.KVTotalBlocks = own(used), known(total)
	return r
}

// prefill is a rank with tokens pending and a token budget.
func prefill(dp int, tokens, budget load.Value) load.Rank {
	r := rank(dp)
	r.ActivePrefillTokens, r.MaxNumBatchedTokens = tokens, budget
	return r
}

// TestEvaluateRule covers Dynamo's rule on a fresh Evaluator, so without
// hysteresis.
func TestEvaluateRule(t *testing.T) {
	tokens := func(n uint64) busy.Thresholds { return busy.Thresholds{ActivePrefillTokens: new(n)} }
	frac := func(f float64) busy.Thresholds { return busy.Thresholds{ActivePrefillTokensFrac: new(f)} }
	both := busy.Thresholds{ActiveDecodeBlocks: new(0.8), ActivePrefillTokens: new(uint64(100))}
	full := func(dp int) load.Rank { // over every threshold
		r := engineKV(dp, 100, 100)
		r.ActiveDecodeBlocks, r.ActivePrefillTokens, r.MaxNumBatchedTokens = own(100), known(1<<40), known(8192)
		return r
	}
	for _, tc := range []struct {
		name      string
		th        busy.Thresholds
		ranks     []load.Rank
		wantRanks []bool
		wantBusy  bool
	}{
		{name: "no thresholds is never busy", th: busy.Thresholds{},
			ranks: []load.Rank{full(0)}, wantRanks: []bool{false}},
		{name: "no ranks is not busy", th: both, ranks: nil, wantRanks: []bool{}},

		{name: "decode: engine above the limit", th: decodeOnly(0.8),
			ranks: []load.Rank{engineKV(0, 81, 100)}, wantRanks: []bool{true}, wantBusy: true},
		{name: "decode: engine at the limit is not above it", th: decodeOnly(0.8),
			ranks: []load.Rank{engineKV(0, 80, 100)}, wantRanks: []bool{false}},
		{name: "decode: the engine's value wins over slotgate's", th: decodeOnly(0.8),
			ranks: []load.Rank{func() load.Rank {
				r := engineKV(0, 10, 100)
				r.ActiveDecodeBlocks = own(90)
				return r
			}()}, wantRanks: []bool{false}},
		{name: "decode: the engine's high value wins over slotgate's low", th: decodeOnly(0.8),
			ranks: []load.Rank{func() load.Rank {
				r := engineKV(0, 99, 100)
				r.ActiveDecodeBlocks = own(1)
				return r
			}()}, wantRanks: []bool{true}, wantBusy: true},
		{name: "decode: slotgate's value without the engine's", th: decodeOnly(0.8),
			ranks: []load.Rank{ownKV(0, 90, 100)}, wantRanks: []bool{true}, wantBusy: true},
		{name: "decode: no signal, no check", th: decodeOnly(0),
			ranks:     []load.Rank{func() load.Rank { r := rank(0); r.KVTotalBlocks = known(100); return r }()},
			wantRanks: []bool{false}},
		{name: "decode: unknown total, no check", th: decodeOnly(0.1),
			ranks:     []load.Rank{func() load.Rank { r := rank(0); r.KVUsedBlocks = known(1000); return r }()},
			wantRanks: []bool{false}},
		{name: "decode: zero total, no check", th: decodeOnly(0.1),
			ranks: []load.Rank{engineKV(0, 5, 0)}, wantRanks: []bool{false}},
		{name: "decode: threshold 0, one block is busy", th: decodeOnly(0),
			ranks: []load.Rank{engineKV(0, 1, 100)}, wantRanks: []bool{true}, wantBusy: true},
		{name: "decode: threshold 0, no block is not busy", th: decodeOnly(0),
			ranks: []load.Rank{engineKV(0, 0, 100)}, wantRanks: []bool{false}},
		{name: "decode: invalid threshold is off", th: decodeOnly(math.NaN()),
			ranks: []load.Rank{engineKV(0, 100, 100)}, wantRanks: []bool{false}},
		{name: "decode: negative threshold is off, not always busy", th: decodeOnly(-1),
			ranks: []load.Rank{engineKV(0, 0, 100)}, wantRanks: []bool{false}},

		{name: "prefill: above", th: tokens(100),
			ranks: []load.Rank{prefill(0, known(101), unknown)}, wantRanks: []bool{true}, wantBusy: true},
		{name: "prefill: at is not above", th: tokens(100),
			ranks: []load.Rank{prefill(0, known(100), unknown)}, wantRanks: []bool{false}},
		{name: "prefill: unknown tokens", th: tokens(0),
			ranks: []load.Rank{prefill(0, unknown, unknown)}, wantRanks: []bool{false}},
		{name: "prefill: negative tokens", th: tokens(0),
			ranks: []load.Rank{prefill(0, known(-5), unknown)}, wantRanks: []bool{false}},

		{name: "frac: above frac × budget", th: frac(0.5),
			ranks: []load.Rank{prefill(0, known(4097), known(8192))}, wantRanks: []bool{true}, wantBusy: true},
		{name: "frac: at frac × budget", th: frac(0.5),
			ranks: []load.Rank{prefill(0, known(4096), known(8192))}, wantRanks: []bool{false}},
		{name: "frac: default budget, at", th: frac(1),
			ranks: []load.Rank{prefill(0, known(busy.DefaultMaxNumBatchedTokens), unknown)}, wantRanks: []bool{false}},
		{name: "frac: default budget, above", th: frac(1),
			ranks: []load.Rank{prefill(0, known(busy.DefaultMaxNumBatchedTokens+1), unknown)}, wantRanks: []bool{true}, wantBusy: true},
		{name: "frac: zero budget takes the default", th: frac(0.5),
			ranks: []load.Rank{prefill(0, known(1000), known(0))}, wantRanks: []bool{false}},
		{name: "frac: 0 makes any pending token busy", th: frac(0),
			ranks: []load.Rank{prefill(0, known(1), known(8192))}, wantRanks: []bool{true}, wantBusy: true},
		{name: "frac: huge product saturates", th: frac(1e300),
			ranks: []load.Rank{prefill(0, known(math.MaxInt64), known(math.MaxInt64))}, wantRanks: []bool{false}},
		{name: "frac: unknown tokens", th: frac(0),
			ranks: []load.Rank{prefill(0, unknown, known(8192))}, wantRanks: []bool{false}},
		{name: "frac: negative threshold is off", th: frac(-1),
			ranks: []load.Rank{prefill(0, known(1), known(8192))}, wantRanks: []bool{false}},

		{name: "OR per rank: prefill alone", th: both,
			ranks: []load.Rank{func() load.Rank {
				r := engineKV(0, 1, 100)
				r.ActivePrefillTokens = known(101)
				return r
			}()}, wantRanks: []bool{true}, wantBusy: true},
		{name: "OR per rank: decode alone", th: both,
			ranks: []load.Rank{func() load.Rank {
				r := engineKV(0, 90, 100)
				r.ActivePrefillTokens = known(0)
				return r
			}()}, wantRanks: []bool{true}, wantBusy: true},
		{name: "AND over ranks: one idle rank keeps the worker open", th: decodeOnly(0.8),
			ranks:     []load.Rank{engineKV(0, 90, 100), engineKV(1, 10, 100), engineKV(2, 95, 100)},
			wantRanks: []bool{true, false, true}},
		{name: "AND over ranks: every rank busy", th: both,
			ranks:     []load.Rank{engineKV(3, 90, 100), prefill(1, known(500), unknown)},
			wantRanks: []bool{true, true}, wantBusy: true},
		{name: "AND over ranks: a rank with nothing known is not busy", th: decodeOnly(0.8),
			ranks:     []load.Rank{engineKV(0, 90, 100), rank(1)},
			wantRanks: []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := busy.NewEvaluator().Evaluate(tc.th, tc.ranks)
			if !slices.Equal(got.Ranks, tc.wantRanks) || got.Busy != tc.wantBusy {
				t.Errorf("Evaluate() = %+v, want {Ranks:%v Busy:%v}", got, tc.wantRanks, tc.wantBusy)
			}
		})
	}
}

// TestEvaluateConcurrent runs evaluations from several goroutines, for the
// race detector: the Evaluator is documented as safe for concurrent use.
func TestEvaluateConcurrent(t *testing.T) {
	ev := busy.NewEvaluator()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			th := decodeOnly(0.5 + float64(g%2)/10)
			for i := range 200 {
				res := ev.Evaluate(th, []load.Rank{engineKV(g%3, int64(i%100), 100)})
				if len(res.Ranks) != 1 || res.Busy != res.Ranks[0] {
					t.Errorf("Evaluate() = %+v: one rank, and Busy equal to it", res)
					return
				}
			}
		})
	}
	wg.Wait()
}
