package busy_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
)

// step is one evaluation in a hysteresis scenario.
type step struct {
	th    busy.Thresholds
	ranks []load.Rank
	want  []bool // per rank
}

// runSteps evaluates the steps in order on one Evaluator.
func runSteps(t *testing.T, steps []step) {
	t.Helper()
	ev := busy.NewEvaluator()
	for i, s := range steps {
		got := ev.Evaluate(s.th, s.ranks)
		if !slices.Equal(got.Ranks, s.want) {
			t.Fatalf("step %d: Evaluate(%v, %+v).Ranks = %v, want %v", i, s.th, s.ranks, got.Ranks, s.want)
		}
	}
}

// engineSteps is a scenario on one rank whose engine reports used of total
// blocks at each step, under one decode threshold.
func engineSteps(th float64, total int64, used []int64, want []bool) []step {
	steps := make([]step, len(used))
	for i := range used {
		steps[i] = step{th: decodeOnly(th), ranks: []load.Rank{engineKV(0, used[i], total)}, want: []bool{want[i]}}
	}
	return steps
}

func TestHysteresisBand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		th    float64
		total int64
		used  []int64
		want  []bool
	}{
		// limit 80, band 4: busy above 80, clears at 76 or below.
		{name: "enters above, stays in the band, clears at the level", th: 0.8, total: 100,
			used: []int64{81, 80, 77, 76, 77, 80, 81},
			want: []bool{true, true, true, false, false, false, true}},
		{name: "the band holds only a rank that entered", th: 0.8, total: 100,
			used: []int64{79, 78, 80},
			want: []bool{false, false, false}},
		{name: "a drop far below clears at once", th: 0.8, total: 100,
			used: []int64{100, 0, 79},
			want: []bool{true, false, false}},
		// limit 800, band 40: clears at 760.
		{name: "band is 5% of the limit", th: 0.8, total: 1000,
			used: []int64{801, 761, 760},
			want: []bool{true, true, false}},
		// limit 5.9: 5% would be 0.3 and leave no integer in the band;
		// one block makes 5 stay busy and 4 clear.
		{name: "band is at least one block", th: 0.59, total: 10,
			used: []int64{6, 5, 4},
			want: []bool{true, true, false}},
		{name: "threshold 0: busy at one block, clears at none", th: 0, total: 100,
			used: []int64{1, 0, 0},
			want: []bool{true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, engineSteps(tc.th, tc.total, tc.used, tc.want))
		})
	}
}

func TestHysteresisCannotStick(t *testing.T) {
	th := decodeOnly(0.8)
	engineGone := func(own int64) load.Rank { return ownKV(0, own, 100) }
	noSignal := func() load.Rank { r := rank(0); r.KVTotalBlocks = known(100); return r }
	noTotal := func(used int64) load.Rank { r := rank(0); r.KVUsedBlocks = known(used); return r }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		// ai-dynamo/dynamo#10564: Dynamo's latch waited for both signals
		// to report low; when one stopped, the rank stayed busy forever.
		{name: "engine stops while slotgate's signal is low: clears (dynamo#10564)", steps: []step{
			{th: th, ranks: []load.Rank{engineKV(0, 95, 100)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{engineGone(10)}, want: []bool{false}},
		}},
		{name: "engine stops while slotgate's signal is in the band: holds, then clears", steps: []step{
			{th: th, ranks: []load.Rank{engineKV(0, 95, 100)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{engineGone(78)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{engineGone(76)}, want: []bool{false}},
		}},
		{name: "slotgate's high signal does not hold a rank the engine says is free", steps: []step{
			{th: th, ranks: []load.Rank{ownKV(0, 95, 100)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{func() load.Rank {
				r := engineKV(0, 5, 100)
				r.ActiveDecodeBlocks = own(95)
				return r
			}()}, want: []bool{false}},
		}},
		{name: "no signal clears the state", steps: []step{
			{th: th, ranks: []load.Rank{engineKV(0, 95, 100)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{noSignal()}, want: []bool{false}},
			{th: th, ranks: []load.Rank{engineKV(0, 79, 100)}, want: []bool{false}},
		}},
		{name: "unknown total clears the state", steps: []step{
			{th: th, ranks: []load.Rank{engineKV(0, 95, 100)}, want: []bool{true}},
			{th: th, ranks: []load.Rank{noTotal(95)}, want: []bool{false}},
			{th: th, ranks: []load.Rank{engineKV(0, 79, 100)}, want: []bool{false}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.steps) })
	}
}

func TestHysteresisReset(t *testing.T) {
	at := func(used ...int64) []load.Rank {
		ranks := make([]load.Rank, len(used))
		for i, u := range used {
			ranks[i] = engineKV(i, u, 100)
		}
		return ranks
	}
	withPrefill := busy.Thresholds{ActiveDecodeBlocks: new(0.8), ActivePrefillTokens: new(uint64(1000))}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		// Without the reset, 79 would hold: the clear level at 0.81 is 76.95.
		{name: "a decode threshold change drops the state", steps: []step{
			{th: decodeOnly(0.8), ranks: at(81), want: []bool{true}},
			{th: decodeOnly(0.8), ranks: at(79), want: []bool{true}},
			{th: decodeOnly(0.81), ranks: at(79), want: []bool{false}},
		}},
		{name: "any threshold change drops the state", steps: []step{
			{th: decodeOnly(0.8), ranks: at(81), want: []bool{true}},
			{th: withPrefill, ranks: at(79), want: []bool{false}},
		}},
		{name: "equal thresholds in new pointers keep the state", steps: []step{
			{th: decodeOnly(0.8), ranks: at(81), want: []bool{true}},
			{th: decodeOnly(0.8), ranks: at(79), want: []bool{true}},
		}},
		{name: "a rank that disappears loses its state, the others keep theirs", steps: []step{
			{th: decodeOnly(0.8), ranks: at(81, 81), want: []bool{true, true}},
			{th: decodeOnly(0.8), ranks: at(79), want: []bool{true}},
			{th: decodeOnly(0.8), ranks: at(79, 79), want: []bool{true, false}},
		}},
		{name: "state follows DPRank, not position", steps: []step{
			{th: decodeOnly(0.8), ranks: []load.Rank{engineKV(7, 81, 100), engineKV(3, 10, 100)}, want: []bool{true, false}},
			{th: decodeOnly(0.8), ranks: []load.Rank{engineKV(3, 79, 100), engineKV(7, 79, 100)}, want: []bool{false, true}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.steps) })
	}
}

// TestHysteresisWorker checks that the worker's state follows the ranks'
// through the band.
func TestHysteresisWorker(t *testing.T) {
	ev := busy.NewEvaluator()
	for i, s := range []struct {
		used [2]int64
		want bool
	}{
		{used: [2]int64{81, 50}, want: false},
		{used: [2]int64{78, 81}, want: true}, // rank 0 held by the band
		{used: [2]int64{76, 81}, want: false},
	} {
		got := ev.Evaluate(decodeOnly(0.8), []load.Rank{engineKV(0, s.used[0], 100), engineKV(1, s.used[1], 100)})
		if got.Busy != s.want {
			t.Fatalf("step %d (%s): Busy = %v, want %v", i, fmt.Sprint(s.used), got.Busy, s.want)
		}
	}
}
