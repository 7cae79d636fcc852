package main

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one scrape of a Prometheus text endpoint.
type families map[string]*dto.MetricFamily

// scrapeFamilies reads url's Prometheus text exposition.
func scrapeFamilies(ctx context.Context, url string) (families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics of %s: %w", url, err)
	}
	return fams, nil
}

// sum adds the counters or gauges of name, only the series whose label
// has value when label is given.
func (f families) sum(name, label, value string) float64 {
	total := 0.0
	for _, m := range f[name].GetMetric() {
		if label != "" && labelValue(m, label) != value {
			continue
		}
		if m.Counter != nil {
			total += m.Counter.GetValue()
		} else {
			total += m.Gauge.GetValue()
		}
	}
	return total
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sample is what the demo reads from slotgate's admin /metrics.
type sample struct {
	engine, queue, waiting, rejected, direct, queued float64
}

func scrape(ctx context.Context, adminURL string) (sample, error) {
	f, err := scrapeFamilies(ctx, adminURL+"/metrics")
	if err != nil {
		return sample{}, err
	}
	return sample{
		engine:   f.sum("dynamo_engine_request", "", ""),
		queue:    f.sum("dynamo_request_queue", "", ""),
		waiting:  f.sum("dynamo_backend_admission_engine_wait_count", "", ""),
		rejected: f.sum("dynamo_rejection_request_total", "", ""),
		direct:   f.sum("slotgate_requests_total", "outcome", "admitted_direct"),
		queued:   f.sum("slotgate_requests_total", "outcome", "admitted_queued"),
	}, nil
}

// engineSample is what the demo reads from enginesim: vLLM's gauges on
// /metrics and enginesim's own peaks on /enginesim/metrics.
type engineSample struct {
	running, waiting float64
	// peakBeforeFirstToken is the most requests before their first output
	// token at once since the engine started.
	peakBeforeFirstToken float64
}

func scrapeEngine(ctx context.Context, engineURL string) (engineSample, error) {
	f, err := scrapeFamilies(ctx, engineURL+"/metrics")
	if err != nil {
		return engineSample{}, err
	}
	s := engineSample{
		running: f.sum("vllm:num_requests_running", "", ""),
		waiting: f.sum("vllm:num_requests_waiting", "", ""),
	}
	own, err := scrapeFamilies(ctx, engineURL+"/enginesim/metrics")
	if err != nil {
		return engineSample{}, err
	}
	s.peakBeforeFirstToken = own.sum("enginesim_requests_before_first_token_max", "", "")
	return s, nil
}
