package main

import (
	"slices"
	"time"
)

// classSummary is one class's figures in one run (or their medians over
// the runs). Counts are float64 so that a median of an even number of
// runs can fall between two.
type classSummary struct {
	Sent     float64 `json:"sent"`
	Served   float64 `json:"served"`
	Refused  float64 `json:"refused"`
	TimedOut float64 `json:"timed_out"`
	Failed   float64 `json:"failed"`
	// TTFT percentiles in milliseconds, over the requests that got a first
	// token (a request refused or timed out before it has none).
	TTFTP50 float64 `json:"ttft_p50_ms"`
	TTFTP90 float64 `json:"ttft_p90_ms"`
	TTFTP99 float64 `json:"ttft_p99_ms"`
	TTFTMax float64 `json:"ttft_max_ms"`
}

// configResult is one configuration's figures.
type configResult struct {
	Short classSummary `json:"short"`
	Huge  classSummary `json:"huge"`
	// EnginePeakBeforeFirstToken is enginesim's exact peak of requests
	// queued or in prefill at once (enginesim_requests_before_first_token_max).
	EnginePeakBeforeFirstToken float64 `json:"engine_peak_before_first_token"`
}

// summarize counts records of class k and takes their TTFT percentiles.
func summarize(recs []record, k kind) classSummary {
	var s classSummary
	var ttfts []time.Duration
	for _, r := range recs {
		if r.Kind != k {
			continue
		}
		s.Sent++
		switch r.Outcome {
		case served:
			s.Served++
		case refused:
			s.Refused++
		case timedOut:
			s.TimedOut++
		default:
			s.Failed++
		}
		if r.TTFT > 0 {
			ttfts = append(ttfts, r.TTFT)
		}
	}
	slices.Sort(ttfts)
	s.TTFTP50, s.TTFTP90 = ms(percentile(ttfts, 50)), ms(percentile(ttfts, 90))
	s.TTFTP99, s.TTFTMax = ms(percentile(ttfts, 99)), ms(percentile(ttfts, 100))
	return s
}

// percentile returns the p-th percentile (0 to 100) of sorted by the
// nearest-rank method; 0 for an empty slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fields lists r's figures in a fixed order, for the medians.
func (r *configResult) fields() []*float64 {
	out := []*float64{&r.EnginePeakBeforeFirstToken}
	for _, c := range []*classSummary{&r.Short, &r.Huge} {
		out = append(out, &c.Sent, &c.Served, &c.Refused, &c.TimedOut, &c.Failed,
			&c.TTFTP50, &c.TTFTP90, &c.TTFTP99, &c.TTFTMax)
	}
	return out
}

// medianOf returns each figure's median over runs, field by field (the
// mean of the middle two for an even count); the zero result for none.
func medianOf(runs []configResult) configResult {
	var out configResult
	dst := out.fields()
	for i := range dst {
		vals := make([]float64, len(runs))
		for j := range runs {
			vals[j] = *runs[j].fields()[i]
		}
		*dst[i] = median(vals)
	}
	return out
}

func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
