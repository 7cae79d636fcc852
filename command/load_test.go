package command

import (
	"net/http"
	"testing"
)

// TestORCAHeaderReplacesTheEngines: an engine that sends its own ORCA
// report (vLLM and TensorRT-LLM can) gets it replaced, not doubled: Envoy
// reads only the first value, and which came first would be chance.
func TestORCAHeaderReplacesTheEngines(t *testing.T) {
	lp := &loadParts{}
	ours := "TEXT named_metrics.busy:0"
	lp.orca.Store(&ours)
	h := http.Header{}
	h.Set("endpoint-load-metrics", "TEXT named_metrics.kv_cache_usage_perc:0.9") // as parsed from the engine
	lp.orcaHeader(h)
	if got := h.Values("Endpoint-Load-Metrics"); len(got) != 1 || got[0] != ours {
		t.Errorf("header values = %q, want only %q", got, ours)
	}
	if len(h) != 1 {
		t.Errorf("header = %v, want one key", h)
	}
}
