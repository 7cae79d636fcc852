package report

import (
	"math"
	"strconv"
	"strings"
)

// ORCAHeader is the response header that carries an ORCA load report
// (Open Request Cost Aggregation), which Envoy and gRPC's weighted round
// robin read.
const ORCAHeader = "endpoint-load-metrics"

// ORCAText renders s in ORCA's TEXT form, as the ORCA design document,
// Envoy since 1.33 (PR #37724, "fix the delimiter of the native http
// parser") and vLLM write it:
//
//	TEXT application_utilization=0.42, rps_fractional=12.5, named_metrics.kv_cache_usage=0.42, …
//
// application_utilization is the KV cache usage (KVUsage), or, when no
// rank knows its KV capacity, the share of engine slots in use; it is
// absent when neither is known. rps_fractional is rps, the requests
// admitted per second, when it is known (rps >= 0): Envoy's and gRPC's
// weighted round robin ignore a report without it. The named metrics are
// kv_cache_usage (when known), active_prefill_tokens, active_decode_blocks
// (when known), in_flight, queued and busy (0 or 1).
//
// Pairs are written name=value and separated by ", ". Envoy's first
// parser split at ':' (PR #35422); which releases before 1.33 take '='
// is not certain, so a 1.32 or older Envoy may refuse these reports. A
// value that is not a finite number of at least 0 is left out rather
// than sent: Envoy refuses the whole report for one bad value.
func ORCAText(s *Snapshot, rps float64) string {
	var b strings.Builder
	b.WriteString("TEXT ")
	first := true
	put := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	if u, ok := s.Utilization(); ok {
		put("application_utilization", u)
	}
	put("rps_fractional", rps)
	if usage, known := s.KVUsage(); known {
		put("named_metrics.kv_cache_usage", usage)
	}
	put("named_metrics.active_prefill_tokens", float64(s.PrefillTokens()))
	if blocks, ok := s.DecodeBlocks(); ok {
		put("named_metrics.active_decode_blocks", float64(blocks))
	}
	put("named_metrics.in_flight", float64(s.Requests.InFlight))
	put("named_metrics.queued", float64(s.Requests.Queued))
	put("named_metrics.busy", b2f(s.Busy))
	return b.String()
}

// Utilization is ORCA's application_utilization of s, the one rule of
// every ORCA report slotgate makes (the HTTP header, the gRPC reports):
// the KV cache usage (KVUsage); when no rank knows its KV capacity, the
// share of engine slots in use, InFlight/Limit capped at 1. ok is false
// when neither is known.
func (s *Snapshot) Utilization() (u float64, ok bool) {
	if usage, known := s.KVUsage(); known {
		return usage, true
	}
	if s.Requests.Limit > 0 {
		return min(float64(s.Requests.InFlight)/float64(s.Requests.Limit), 1), true
	}
	return 0, false
}

// DecodeBlocks sums slotgate's active decode blocks over the ranks that
// know them; ok is false when none does.
func (s *Snapshot) DecodeBlocks() (int64, bool) {
	var n int64
	known := false
	for i := range s.Ranks {
		if f := s.Ranks[i].ActiveDecodeBlocks; f.Known() {
			n, known = n+f.N, true
		}
	}
	return n, known
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
