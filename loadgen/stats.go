package loadgen

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of durations, in seconds. All fields are 0 when
// Count is 0.
type Summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
}

// Percentile returns the p-th percentile of sorted (ascending) by the
// nearest-rank method: the sample of rank ceil(p/100 × n), counting from 1,
// which is the smallest sample with at least p% of the samples at or below
// it. It is always one of the samples, never an interpolation. p is clamped
// to 0..100, and p = 0 gives the minimum; no samples give 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	// p*n before the division keeps whole p exact: 99*100/100 is 99, where
	// 0.99*100 is not.
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Summarize sorts samples in place and describes them.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum float64
	for _, d := range samples {
		sum += d.Seconds()
	}
	return Summary{
		Count: len(samples),
		Mean:  sum / float64(len(samples)),
		P50:   Percentile(samples, 50).Seconds(),
		P90:   Percentile(samples, 90).Seconds(),
		P99:   Percentile(samples, 99).Seconds(),
		Min:   samples[0].Seconds(),
		Max:   samples[len(samples)-1].Seconds(),
	}
}
