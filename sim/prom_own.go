package sim

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// enginesim's own series describe the simulation, not an engine, so they
// have enginesim_* names, no engine's. Every dialect serves them at
// OwnMetricsPath; the Prometheus dialects (vLLM, SGLang) add them to their
// /metrics too. They are engine-wide, with no rank label: the engine-wide
// peak is not the sum of the ranks' (RankStats has those).
const (
	// MetricBeforeFirstToken is the gauge of Stats.BeforeFirstToken.
	MetricBeforeFirstToken = "enginesim_requests_before_first_token"
	// MetricBeforeFirstTokenMax is the gauge of Stats.BeforeFirstTokenMax.
	MetricBeforeFirstTokenMax = "enginesim_requests_before_first_token_max"
	// OwnMetricsPath serves only enginesim's own series, as Prometheus text,
	// whatever the dialect: TensorRT-LLM's /metrics is JSON.
	OwnMetricsPath = "/enginesim/metrics"
)

// ownCollector exports enginesim's own series, count and peak read under
// one lock so that they agree.
type ownCollector struct {
	engine       *Engine
	before, peak *prometheus.Desc
}

func newOwnCollector(e *Engine) *ownCollector {
	return &ownCollector{
		engine: e,
		before: prometheus.NewDesc(MetricBeforeFirstToken,
			"Requests queued or in prefill that have not produced their first output token, over all ranks.", nil, nil),
		peak: prometheus.NewDesc(MetricBeforeFirstTokenMax,
			"Most requests before their first output token at once since start, over all ranks; exact, not sampled.", nil, nil),
	}
}

func (c *ownCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.before
	ch <- c.peak
}

func (c *ownCollector) Collect(ch chan<- prometheus.Metric) {
	hw := c.engine.beforeFirst.get()
	ch <- prometheus.MustNewConstMetric(c.before, prometheus.GaugeValue, float64(hw.n))
	ch <- prometheus.MustNewConstMetric(c.peak, prometheus.GaugeValue, float64(hw.max))
}

// addOwnMetrics serves enginesim's own series at OwnMetricsPath, from a
// registry of their own.
func (s *server) addOwnMetrics(rt router) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(newOwnCollector(s.engine)); err != nil {
		return fmt.Errorf("sim: register enginesim metrics: %w", err)
	}
	rt.add(http.MethodGet, OwnMetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP)
	return nil
}
