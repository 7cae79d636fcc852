package main

import (
	"slices"
	"testing"
)

func TestAddRelative(t *testing.T) {
	for _, tc := range []struct {
		name         string
		runs, direct map[string][]float64
		names        []string
		want         map[string][]float64
	}{
		{"per round",
			map[string][]float64{"p50": {3, 5, 4}},
			map[string][]float64{"p50": {1, 2, 3}},
			[]string{"p50"},
			map[string][]float64{"p50": {3, 5, 4}, "added p50": {2, 3, 1}}},
		{"rounds that do not pair are left out",
			map[string][]float64{"p50": {3, 5}},
			map[string][]float64{"p50": {1}},
			[]string{"p50"},
			map[string][]float64{"p50": {3, 5}}},
		{"nothing asked",
			map[string][]float64{"p50": {3}},
			map[string][]float64{"p50": {1}},
			nil,
			map[string][]float64{"p50": {3}}},
	} {
		addRelative(tc.runs, tc.direct, tc.names)
		if len(tc.runs) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.runs, tc.want)
		}
		for k, v := range tc.want {
			if !slices.Equal(tc.runs[k], v) {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, tc.runs[k], v)
			}
		}
	}
}

func TestPickAndTargets(t *testing.T) {
	got, err := pick(scenarios(), "overload, memory")
	if err != nil || len(got) != 2 || got[0].name != "overload" || got[1].name != "memory" {
		t.Fatalf("pick = %v, %v", got, err)
	}
	if _, err := pick(scenarios(), "nope"); err == nil {
		t.Error("pick of an unknown scenario: want an error")
	}
	e := &env{slotgateBin: "/x/slotgate", haproxy: "/x/haproxy"} // no nginx
	var names []string
	for _, tg := range e.targets([]string{"direct", "slotgate", "haproxy", "haproxy-maxqueue", "nginx"}, false) {
		names = append(names, tg.name)
	}
	if want := []string{"direct", "slotgate", "haproxy", "haproxy-maxqueue"}; !slices.Equal(names, want) {
		t.Errorf("targets = %v, want %v (nginx not installed)", names, want)
	}
	// slotgate-base exists only with --base-bin.
	if ts := e.targets([]string{"slotgate-base"}, false); len(ts) != 0 {
		t.Errorf("slotgate-base without --base-bin: %v", ts)
	}
	withBase := &env{slotgateBin: "/x/slotgate", baseBins: []string{"/y/slotgate"}}
	if ts := withBase.targets([]string{"slotgate-base", "slotgate", "slotgate-1p"}, false); len(ts) != 3 || ts[0].name != "slotgate-base" {
		t.Errorf("targets with --base-bin = %v, want slotgate-base, slotgate and slotgate-1p", ts)
	}
	withBase.baseBins = append(withBase.baseBins, "/z/slotgate")
	if ts := withBase.targets([]string{"slotgate-base2", "slotgate-base"}, false); len(ts) != 2 || ts[0].name != "slotgate-base2" || ts[1].name != "slotgate-base" {
		t.Errorf("targets with two --base-bin = %v, want slotgate-base2 and slotgate-base", ts)
	}
	// --targets replaces a scenario's own, in its order; over gRPC the
	// net/http stream path has no target of its own.
	e.only = splitTargets(" slotgate-nethttp, haproxy,,slotgate ")
	for _, grpc := range []bool{false, true} {
		names = nil
		for _, tg := range e.targets([]string{"direct", "nginx"}, grpc) {
			names = append(names, tg.name)
		}
		want := []string{"slotgate-nethttp", "haproxy", "slotgate"}
		if grpc {
			want = want[1:]
		}
		if !slices.Equal(names, want) {
			t.Errorf("targets with --targets (gRPC %v) = %v, want %v", grpc, names, want)
		}
	}
}

func TestRepsFor(t *testing.T) {
	for _, tc := range []struct {
		max, reps, want int
	}{{0, 3, 3}, {2, 3, 2}, {2, 1, 1}, {1, 5, 1}} {
		if got := repsFor(scenario{maxReps: tc.max}, tc.reps); got != tc.want {
			t.Errorf("repsFor(max %d, --reps %d) = %d, want %d", tc.max, tc.reps, got, tc.want)
		}
	}
}

// TestRoundOrder: the targets run as named, then the other way, so that
// over each two rounds every target's positions add up to the same.
func TestRoundOrder(t *testing.T) {
	tests := []struct {
		n, rep int
		want   []int
	}{
		{n: 1, rep: 0, want: []int{0}},
		{n: 1, rep: 1, want: []int{0}},
		{n: 3, rep: 0, want: []int{0, 1, 2}},
		{n: 3, rep: 1, want: []int{2, 1, 0}},
		{n: 3, rep: 2, want: []int{0, 1, 2}},
		{n: 4, rep: 1, want: []int{3, 2, 1, 0}},
	}
	for _, tt := range tests {
		if got := roundOrder(tt.n, tt.rep); !slices.Equal(got, tt.want) {
			t.Errorf("roundOrder(%d, %d) = %v, want %v", tt.n, tt.rep, got, tt.want)
		}
	}
	for n := 1; n <= 6; n++ {
		sum := make([]int, n)
		for rep := range 2 {
			for pos, i := range roundOrder(n, rep) {
				sum[i] += pos
			}
		}
		for i, s := range sum {
			if s != n-1 {
				t.Errorf("%d targets: target %d's positions over two rounds add up to %d, want %d", n, i, s, n-1)
			}
		}
	}
}
