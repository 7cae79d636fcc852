package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestByRatio(t *testing.T) {
	for _, tt := range []struct {
		metric string
		want   bool
	}{
		{"proxy CPU µs/event", true},
		{"events/s", true},
		{"RSS KiB/stream", true},
		{"TTFT p99 ms", false},
		{"held ITL p99 ms", false},
		{"lost", false},
	} {
		if got := byRatio(tt.metric); got != tt.want {
			t.Errorf("byRatio(%q) = %v, want %v", tt.metric, got, tt.want)
		}
	}
}

func TestPairRounds(t *testing.T) {
	var diff pairedMetric
	diff.pairRounds([]float64{10, 12, 9, 40}, []float64{11, 12, 10}, false) // the fourth has no base: left out
	if want := []float64{-1, 0, -1}; !equalFloats(diff.values, want) || diff.under != 3 {
		t.Errorf("differences %v, %d under; want %v, 3", diff.values, diff.under, want)
	}
	var ratio pairedMetric
	ratio.pairRounds([]float64{9, 12, 5}, []float64{10, 10, 0}, true) // a zero base has no ratio
	if want := []float64{0.9, 1.2}; !equalFloats(ratio.values, want) || ratio.under != 1 {
		t.Errorf("ratios %v, %d under; want %v, 1", ratio.values, ratio.under, want)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
			return false
		}
	}
	return true
}

// pairedFile is a results file of two scenarios: streams-1024 with
// slotgate, haproxy and direct, and fast-c1 without haproxy.
func pairedFile(ttft, haTTFT, cpu, haCPU []float64) Results {
	row := func(target string, ttft, cpu []float64) Row {
		return Row{Target: target, Metrics: map[string]Summary{
			"TTFT p99 ms":        summarize(ttft),
			"proxy CPU µs/event": summarize(cpu),
		}}
	}
	return Results{Scenarios: []ScenarioResult{
		// "added TTFT p99 ms" is named but measured on no target (no
		// direct in the run): it gets no row.
		{Name: "streams-1024", Metrics: []string{"TTFT p99 ms", "proxy CPU µs/event", "added TTFT p99 ms"}, Rows: []Row{
			row("direct", []float64{1, 1}, []float64{0, 0}),
			row("slotgate", ttft, cpu),
			row("haproxy", haTTFT, haCPU),
		}},
		{Name: "fast-c1", Metrics: []string{"TTFT p99 ms"}, Rows: []Row{row("slotgate", ttft, cpu)}},
	}}
}

func TestPairScenariosPools(t *testing.T) {
	files := []Results{
		pairedFile([]float64{30, 36}, []float64{33, 34}, []float64{9, 10}, []float64{10, 10}),
		pairedFile([]float64{40, 31}, []float64{35, 32}, []float64{12, 8}, []float64{10, 10}),
	}
	scs := pairScenarios(files, "haproxy")
	if len(scs) != 1 || scs[0].name != "streams-1024" || scs[0].rounds != 4 {
		t.Fatalf("paired %+v, want streams-1024 alone over 4 rounds", scs)
	}
	if got := scs[0].targets; len(got) != 1 || got[0] != "slotgate" {
		t.Fatalf("targets %v, want slotgate alone (not direct, not the base)", got)
	}
	var b strings.Builder
	writePaired(&b, scs, "haproxy")
	out := b.String()
	// TTFT: −3, +2, +5, −1 → median +0.5, 2 of 4 under; CPU: 0.9, 1.0,
	// 1.2, 0.8 → median 0.95, 3 of 4 at or under.
	for _, want := range []string{
		"### streams-1024: round by round against haproxy (up to 4 rounds)",
		"| metric | slotgate |",
		"| TTFT p99 ms − haproxy | +0.50 (2 of 4 ≤) |",
		"| proxy CPU µs/event ÷ haproxy | 0.950x (3 of 4 ≤) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fast-c1") {
		t.Errorf("a scenario without the base was compared:\n%s", out)
	}
	if strings.Contains(out, "added TTFT") {
		t.Errorf("a metric paired in no round has a row:\n%s", out)
	}
}

func TestPairsMain(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, f := range []Results{
		pairedFile([]float64{30}, []float64{33}, []float64{9}, []float64{10}),
		pairedFile([]float64{40}, []float64{35}, []float64{12}, []float64{10}),
	} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, string(rune('a'+i))+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var b strings.Builder
	if err := pairsMain(paths, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| TTFT p99 ms − haproxy | +1 (1 of 2 ≤) |", "| proxy CPU µs/event ÷ haproxy | 1.050x (1 of 2 ≤) |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no files", nil, "no results files"},
		{"not JSON", []string{bad}, "bad.json"},
		{"a missing file", []string{filepath.Join(dir, "none.json")}, "none.json"},
		{"a base nothing measured", append([]string{"--base", "nginx"}, paths...), `target "nginx"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := pairsMain(tt.args, &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one naming %q", err, tt.want)
			}
		})
	}
}
