package report_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/slotgate/slotgate/load/report"
)

// FuzzUnmarshal: whatever a sidecar (or something posing as one) sends, a
// watcher's decoding never panics, and what it accepts survives a round
// trip unchanged.
func FuzzUnmarshal(f *testing.F) {
	b, err := json.Marshal(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"seq":1,"ranks":[{"dp_rank":0,"kv_total_blocks":5,"sources":{"kv_total_blocks":"martian"}}]}`))
	f.Add([]byte(`{"ranks":[{}],"thresholds":{"active_prefill_tokens_threshold":18446744073709551615}}`))
	f.Add([]byte(`{"requests":{"prefilling":2,"ranks":[{"dp_rank":1,"waiting_limit":3},{}]},"ranks":[]}`))
	f.Add([]byte(`{"requests":{"ranks":[]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s report.Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		again, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", s, err)
		}
		var back report.Snapshot
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatalf("decode our own %s: %v", again, err)
		}
		if !back.SameLoad(&s) || back.Seq != s.Seq {
			t.Fatalf("round trip changed it:\n%+v\n%+v", s, back)
		}
	})
}

// FuzzORCAText: whatever the load and the rate, the ORCA header parses as
// Envoy's TEXT parser reads it (parseORCA): name=value pairs, no
// duplicate, no name Envoy refuses, no NaN, infinity or negative value.
func FuzzORCAText(f *testing.F) {
	f.Add(int64(200), int64(31), int64(30), int64(1234), 3, 1, 8, true, 12.5)
	f.Add(int64(0), int64(-5), int64(-1), int64(-7), -3, -1, 0, false, math.NaN())
	f.Add(int64(1), int64(1<<62), int64(1<<62), int64(1<<62), 1<<30, 1<<30, 1, true, math.Inf(1))
	f.Fuzz(func(t *testing.T, total, used, decode, prefill int64, inFlight, queued, limit int, busy bool, rps float64) {
		eng := func(n int64) report.Field { return report.Field{N: n, Source: report.SourceEngine} }
		s := &report.Snapshot{
			Busy:     busy,
			Requests: report.Requests{InFlight: inFlight, Queued: queued, Limit: limit},
			Ranks: []report.Rank{{
				KVTotalBlocks: eng(total), KVUsedBlocks: eng(used), ActiveDecodeBlocks: eng(decode),
				ActivePrefillTokens: eng(prefill),
			}},
		}
		h := report.ORCAText(s, rps)
		got, err := parseORCA(h)
		if err != nil {
			t.Fatalf("Envoy would refuse %q: %v", h, err)
		}
		if _, ok := got["rps_fractional"]; ok != (rps >= 0 && !math.IsInf(rps, 0)) {
			t.Errorf("rps %v: header %q", rps, h)
		}
	})
}
