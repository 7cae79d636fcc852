package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The first-token watchdog in front of a real enginesim whose first token
// is slow (issue 19): with the first token ten minutes away, slotgate
// answers 529 first_token_timeout once the budget (2s) is spent, and the
// engine sees the abort: the request leaves enginesim's in-flight count
// long before its first token would have come. With the first token
// 100ms away, the same slotgate passes the stream untouched.
func TestFirstTokenTimeout(t *testing.T) {
	_, line := runEnginesim(t, "first token", "--listen", "127.0.0.1:0", "--max-num-seqs", "4",
		"--fault-slow-first-token-rate", "1", "--fault-slow-first-token", "10m")
	var eng struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &eng); err != nil {
		t.Fatal(err)
	}
	engineURL := "http://" + eng.Addr
	sg := start(t, engineURL, nil, "--engine-request-limit", "2", "--first-token-timeout", "2s")
	const stream = `{"model":"sim-model","prompt":"hello","max_tokens":8,"stream":true}`
	ctx := t.Context()

	r := post(ctx, http.DefaultClient, sg.proxy, "cut", stream)
	if r.err != nil || r.status != 529 || r.header.Get("X-Slotgate-Reason") != "first_token_timeout" ||
		r.header.Get("Retry-After") != "1" {
		t.Fatalf("slow first token: %v, %d, reason %q, Retry-After %q; want 529, first_token_timeout, 1",
			r.err, r.status, r.header.Get("X-Slotgate-Reason"), r.header.Get("Retry-After"))
	}
	if e := decodeError(t, r.body); e.Error.Type != "Overloaded" || e.Error.Code != 529 {
		t.Errorf("error body %q, want type Overloaded, code 529", r.body)
	}
	engineMetric := func(name string, labels ...string) float64 {
		return metricValue(scrapeURL(t, engineURL+"/enginesim/metrics"), name, labels...)
	}
	if n := engineMetric("enginesim_faults_total", "fault", "slow_first_token"); n != 1 {
		t.Errorf("enginesim delayed %v first tokens, want 1: the request reached it", n)
	}
	// Its first token is ten minutes away: only the abort ends it sooner.
	eventually(t, "enginesim to see the abort", func() bool { return engineMetric("enginesim_requests_in_flight") == 0 })
	eventually(t, "the slot back", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if n := sg.metric("slotgate_requests_total", "outcome", "first_token_timeout"); n != 1 {
		t.Errorf("slotgate_requests_total{outcome=first_token_timeout} = %v, want 1", n)
	}
	sg.log.WaitFor(t, `"outcome":"first_token_timeout"`, waitLimit)

	setFaults(ctx, t, engineURL, `{"slow_first_token_rate":1,"slow_first_token":"100ms"}`)
	r = post(ctx, http.DefaultClient, sg.proxy, "in-time", stream)
	if r.err != nil || r.status != http.StatusOK || !strings.HasSuffix(r.body, "data: [DONE]\n\n") || strings.Contains(r.body, `"error"`) {
		t.Fatalf("first token in time: %v, %d %q; want 200, a whole stream", r.err, r.status, r.body)
	}
	if n := sg.metric("slotgate_requests_total", "outcome", "first_token_timeout"); n != 1 {
		t.Errorf("slotgate_requests_total{outcome=first_token_timeout} = %v after a stream in time, want still 1", n)
	}
	eventually(t, "the stream counted as served", func() bool {
		return sg.metric("slotgate_requests_total", "outcome", "admitted_direct") == 1
	})
}

// scrapeURL reads Prometheus text from url.
func scrapeURL(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// setFaults replaces enginesim's fault set.
func setFaults(ctx context.Context, t *testing.T, engineURL, set string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, engineURL+"/enginesim/faults", strings.NewReader(set))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT faults: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT faults: %d", resp.StatusCode)
	}
}
