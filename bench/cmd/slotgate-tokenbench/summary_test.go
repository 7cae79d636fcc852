package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(5), 50, 5 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 100, 100 * time.Millisecond},
		{"p90 of 10 rounds up", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p0 is the min", ms(3, 4), 0, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeCountsEachOutcomeOnce(t *testing.T) {
	recs := []record{
		{Kind: kindShort, Outcome: served, TTFT: 30 * time.Millisecond},
		{Kind: kindShort, Outcome: served, TTFT: 10 * time.Millisecond},
		{Kind: kindShort, Outcome: refused, Status: 529},
		{Kind: kindShort, Outcome: timedOut, TTFT: 20 * time.Millisecond}, // its first token came, then the deadline
		{Kind: kindShort, Outcome: failed},
		{Kind: kindHuge, Outcome: served, TTFT: 900 * time.Millisecond},
		{}, // an arrival never sent (Ctrl-C): no class counts it
	}
	tests := []struct {
		kind kind
		want classSummary
	}{
		{kindShort, classSummary{Sent: 5, Served: 2, Refused: 1, TimedOut: 1, Failed: 1, TTFTP50: 20, TTFTP90: 30, TTFTP99: 30, TTFTMax: 30}},
		{kindHuge, classSummary{Sent: 1, Served: 1, TTFTP50: 900, TTFTP90: 900, TTFTP99: 900, TTFTMax: 900}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			if got := summarize(recs, tt.kind); got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMedianOf(t *testing.T) {
	run := func(p99, peak float64) configResult {
		return configResult{Short: classSummary{Sent: 10, TTFTP99: p99}, EnginePeakBeforeFirstToken: peak}
	}
	tests := []struct {
		name          string
		runs          []configResult
		wantP99, peak float64
	}{
		{"none", nil, 0, 0},
		{"one", []configResult{run(5, 2)}, 5, 2},
		{"odd: the middle one, field by field", []configResult{run(9, 1), run(1, 3), run(5, 2)}, 5, 2},
		{"even: the mean of the middle two", []configResult{run(1, 4), run(3, 2)}, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := medianOf(tt.runs)
			if m.Short.TTFTP99 != tt.wantP99 || m.EnginePeakBeforeFirstToken != tt.peak {
				t.Errorf("p99 %v, peak %v; want %v, %v", m.Short.TTFTP99, m.EnginePeakBeforeFirstToken, tt.wantP99, tt.peak)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	res := results{Reps: 3, Configs: []configReport{{config: config{Name: "N=16 Q=64"}, Median: configResult{
		Short: classSummary{Sent: 10, Served: 8, Refused: 1, TimedOut: 1, TTFTP50: 12.25, TTFTP99: 300},
		Huge:  classSummary{Sent: 1, Served: 1, TTFTP50: 900, TTFTMax: 900}, EnginePeakBeforeFirstToken: 9}}}}
	var b strings.Builder
	writeTable(&b, res)
	want := "| N=16 Q=64 | 12.2 | 0 | 300 | 900 | 900 | 10 / 8 / 1 / 1 / 0 | 1 / 1 / 0 / 0 / 0 | 9 |"
	if !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "Medians of 3 run(s)") {
		t.Errorf("table:\n%s\nwant a row %s", b.String(), want)
	}
}
