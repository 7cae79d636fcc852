package report

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
