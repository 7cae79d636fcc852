package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/sim"
)

// Every dialect serves enginesim's own gauges at sim.OwnMetricsPath, and
// the Prometheus dialects in /metrics too: after one streamed request, none
// is before its first token and the most there were is 1.
func TestRunServesOwnMetrics(t *testing.T) {
	tests := []struct {
		dialect string
		paths   []string
	}{
		{"vllm", []string{sim.OwnMetricsPath, "/metrics"}},
		{"sglang", []string{sim.OwnMetricsPath, "/metrics"}},
		{"trtllm", []string{sim.OwnMetricsPath}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			s := startRun(t, []string{"--listen", "127.0.0.1:0", "--speedup-ratio", "100", "--metrics-dialect", tt.dialect}, nil)
			c := client(t)
			r := stream(t, c, s.addr, `{"prompt":"hello","max_tokens":4,"ignore_eos":true,"stream":true}`)
			if _, done := events(r.Body, 0); !done {
				t.Fatal("the stream did not end with [DONE]")
			}
			for _, path := range tt.paths {
				got := gauges(t, c, "http://"+s.addr+path)
				if got[sim.MetricBeforeFirstToken] != "0" || got[sim.MetricBeforeFirstTokenMax] != "1" {
					t.Errorf("GET %s: %s %q, %s %q; want 0 and 1", path, sim.MetricBeforeFirstToken, got[sim.MetricBeforeFirstToken],
						sim.MetricBeforeFirstTokenMax, got[sim.MetricBeforeFirstTokenMax])
				}
			}
		})
	}
}

// gauges fetches Prometheus text and returns the value of each series
// without labels, by name.
func gauges(t *testing.T, c *http.Client, url string) map[string]string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, v, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(name, "#") {
			out[name] = v
		}
	}
	return out
}
