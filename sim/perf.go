package sim

import (
	"math"
	"time"
)

// The step-time model is Dynamo mocker's polynomial one, with its
// constants: ai-dynamo/dynamo, lib/mocker/src/common/perf_model.rs,
// PerfModel::Polynomial (the default perf model of `python -m
// dynamo.mocker`, before it moved into aisimulate-engine). The mocker's
// scheduler sleeps for prefill + decode time of each forward pass divided
// by --speedup-ratio (lib/llm/src/mocker/scheduler.rs), and so does this
// engine. Times are in milliseconds.
const (
	// prefill_ms = prefillC·t² + prefillB·t + prefillA, where t is the number
	// of prompt tokens computed in the step, summed over the batch ("GPU
	// processes them in parallel").
	prefillA = 1.650142e+01
	prefillB = 1.518344e-02
	prefillC = 4.209989e-07

	// decode_ms = decodeC·u² + decodeB·u + decodeA, where u is the fraction
	// of the rank's usable KV blocks in use, floored at decodeMinMs ("token
	// emitting decode steps should not collapse onto the same timestamp").
	decodeA     = 5.74
	decodeB     = 54.01
	decodeC     = -25.74
	decodeMinMs = 1.0
)

// PrefillMillis is the modelled time of computing tokens prompt tokens in
// one step, in milliseconds; 0 for none.
func PrefillMillis(tokens int) float64 {
	if tokens <= 0 {
		return 0
	}
	t := float64(tokens)
	return prefillC*t*t + prefillB*t + prefillA
}

// DecodeMillis is the modelled time of one decode step for a rank whose KV
// pool is the fraction usage in use, in milliseconds.
func DecodeMillis(usage float64) float64 {
	return math.Max(decodeMinMs, decodeC*usage*usage+decodeB*usage+decodeA)
}

// StepDuration is the wall time of one step: prefill of prefillTokens, plus
// one decode pass if decoding, divided by speedup.
func StepDuration(prefillTokens int, decoding bool, usage, speedup float64) time.Duration {
	ms := PrefillMillis(prefillTokens)
	if decoding {
		ms += DecodeMillis(usage)
	}
	return time.Duration(ms / speedup * float64(time.Millisecond))
}
