package report_test

import (
	"encoding/json"
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
	f.Add([]byte(`{"epoch":"1","ttl_ms":9223372036854,"requests":{"queued_tokens":5,"ranks":[{"prefill_token_limit":7}]}}`))
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
		if !back.SameLoad(&s) || back.Seq != s.Seq || back.Epoch != s.Epoch || back.TTL != s.TTL {
			t.Fatalf("round trip changed it:\n%+v\n%+v", s, back)
		}
	})
}
