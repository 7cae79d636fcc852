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
	// MetricInFlight is the gauge of Stats.InFlight.
	MetricInFlight = "enginesim_requests_in_flight"
	// MetricInFlightMax is the gauge of Stats.InFlightMax.
	MetricInFlightMax = "enginesim_requests_in_flight_max"
	// MetricFaults counts the faults injected (Faults.Injected), by its
	// label fault: each of FaultKinds, all present from the start.
	MetricFaults = "enginesim_faults_total"
	// OwnMetricsPath serves only enginesim's own series, as Prometheus text,
	// whatever the dialect: TensorRT-LLM's /metrics is JSON.
	OwnMetricsPath = "/enginesim/metrics"
)

// ownCollector exports enginesim's own series, each count and its peak
// read under one lock so that they agree.
type ownCollector struct {
	engine                 *Engine
	faults                 *Faults
	before, peak           *prometheus.Desc
	inFlight, inFlightPeak *prometheus.Desc
	faultsInjected         *prometheus.Desc
}

func newOwnCollector(e *Engine, f *Faults) *ownCollector {
	return &ownCollector{
		engine: e,
		faults: f,
		before: prometheus.NewDesc(MetricBeforeFirstToken,
			"Requests queued or in prefill that have not produced their first output token, over all ranks.", nil, nil),
		peak: prometheus.NewDesc(MetricBeforeFirstTokenMax,
			"Most requests before their first output token at once since start, over all ranks; exact, not sampled.", nil, nil),
		inFlight: prometheus.NewDesc(MetricInFlight,
			"Generation requests (HTTP completions and chat, gRPC Generate) whose handler has started and neither returned nor seen its client leave.", nil, nil),
		inFlightPeak: prometheus.NewDesc(MetricInFlightMax,
			"Most generation requests in flight at once since start; exact, not sampled.", nil, nil),
		faultsInjected: prometheus.NewDesc(MetricFaults,
			"Faults injected into generation requests, by fault.", []string{"fault"}, nil),
	}
}

func (c *ownCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.before, c.peak, c.inFlight, c.inFlightPeak, c.faultsInjected} {
		ch <- d
	}
}

func (c *ownCollector) Collect(ch chan<- prometheus.Metric) {
	hw := c.engine.beforeFirst.get()
	ch <- prometheus.MustNewConstMetric(c.before, prometheus.GaugeValue, float64(hw.n))
	ch <- prometheus.MustNewConstMetric(c.peak, prometheus.GaugeValue, float64(hw.max))
	fl := c.engine.inFlight.get()
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(fl.n))
	ch <- prometheus.MustNewConstMetric(c.inFlightPeak, prometheus.GaugeValue, float64(fl.max))
	injected := c.faults.Injected()
	for _, k := range FaultKinds() {
		ch <- prometheus.MustNewConstMetric(c.faultsInjected, prometheus.CounterValue, float64(injected[k]), string(k))
	}
}

// addOwnMetrics serves enginesim's own series at OwnMetricsPath, from a
// registry of their own.
func (s *server) addOwnMetrics(rt router) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(newOwnCollector(s.engine, s.faults)); err != nil {
		return fmt.Errorf("sim: register enginesim metrics: %w", err)
	}
	rt.add(http.MethodGet, OwnMetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP)
	return nil
}
