package loadgen_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// ms makes durations from whole milliseconds.
func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []time.Duration // sorted
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample p50", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"1..10 p50", ms(seq(10)...), 50, 5 * time.Millisecond},
		{"1..10 p90", ms(seq(10)...), 90, 9 * time.Millisecond},
		{"1..10 p99", ms(seq(10)...), 99, 10 * time.Millisecond},
		{"1..10 p91 rounds the rank up", ms(seq(10)...), 91, 10 * time.Millisecond},
		{"1..100 p50", ms(seq(100)...), 50, 50 * time.Millisecond},
		{"1..100 p90", ms(seq(100)...), 90, 90 * time.Millisecond},
		{"1..100 p99 (rank exactly 99)", ms(seq(100)...), 99, 99 * time.Millisecond},
		{"1..100 p100", ms(seq(100)...), 100, 100 * time.Millisecond},
		{"1..1000 p99", ms(seq(1000)...), 99, 990 * time.Millisecond},
		{"p0 is the minimum", ms(3, 4, 5), 0, 3 * time.Millisecond},
		{"p above 100 is the maximum", ms(3, 4, 5), 150, 5 * time.Millisecond},
		{"two samples p50 is the lower", ms(1, 9), 50, 1 * time.Millisecond},
		{"two samples p51 is the upper", ms(1, 9), 51, 9 * time.Millisecond},
		{"ties", ms(1, 2, 2, 2, 3), 60, 2 * time.Millisecond},
		{"never interpolates", ms(10, 20, 30, 40), 50, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadgen.Percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}

// TestPercentileDefinition checks random samples against the definition:
// the p-th percentile v has at least p% of the samples at or below it, and
// fewer than p% strictly below it.
func TestPercentileDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(300)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(rng.IntN(50))
		}
		slices.Sort(s)
		for _, p := range []float64{1, 10, 25, 50, 90, 99, 99.9, 100} {
			v := loadgen.Percentile(s, p)
			atOrBelow, below := 0, 0
			for _, x := range s {
				if x <= v {
					atOrBelow++
				}
				if x < v {
					below++
				}
			}
			if float64(atOrBelow)*100 < p*float64(n) || float64(below)*100 >= p*float64(n) {
				t.Fatalf("n=%d p=%v: %v has %d at or below and %d below", n, p, v, atOrBelow, below)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    loadgen.Summary
	}{
		{"none", nil, loadgen.Summary{}},
		{"unsorted 1..4", ms(4, 1, 3, 2), loadgen.Summary{Count: 4, Mean: 0.0025, P50: 0.002, P90: 0.004, P99: 0.004, Min: 0.001, Max: 0.004}},
		{"1..100 shuffled", shuffled(ms(seq(100)...)), loadgen.Summary{Count: 100, Mean: 0.0505, P50: 0.05, P90: 0.09, P99: 0.099, Min: 0.001, Max: 0.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadgen.Summarize(tc.samples)
			if !near(got, tc.want) {
				t.Errorf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func shuffled(s []time.Duration) []time.Duration {
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// near compares summaries, allowing rounding in the mean.
func near(a, b loadgen.Summary) bool {
	d := a.Mean - b.Mean
	a.Mean, b.Mean = 0, 0
	return a == b && d < 1e-12 && d > -1e-12
}
