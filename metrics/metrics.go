package metrics

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/report"
)

// Options configure the metrics.
type Options struct {
	// Limiter returns the limiter's current state. Required.
	Limiter func() limiter.Stats
	// Outcomes are the label values of slotgate_requests_total{outcome}
	// (gate.Outcomes). Required.
	Outcomes []string
	// Protocols are the label values of slotgate_requests_total{protocol},
	// the protocols of the adapters (gate.Protocols). Required.
	Protocols []string
	// Classes are the policy classes (label class). Empty means one class,
	// DefaultClass. Every outcome of every class by every protocol is
	// created at zero.
	Classes []string
	// Load returns the latest load snapshot; nil exposes no load metrics.
	Load func() *report.Snapshot
	// Version and Revision label slotgate_build_info.
	Version, Revision string
}

// Metrics holds slotgate's collectors. Its methods are safe for concurrent
// use and implement the gate's Observer.
type Metrics struct {
	requests  map[series]prometheus.Counter
	queueWait map[string]prometheus.Observer
	firstByte prometheus.Histogram
	admission *admissionCounters
}

// DefaultClass labels every request when no policy classes are
// configured.
const DefaultClass = "default"

// series names one series of slotgate_requests_total.
type series struct{ outcome, class, protocol string }

// New registers every collector on reg.
func New(reg prometheus.Registerer, opts Options) (*Metrics, error) {
	if opts.Limiter == nil || len(opts.Outcomes) == 0 || len(opts.Protocols) == 0 {
		return nil, errors.New("metrics: a limiter source, the outcomes and the protocols are required")
	}
	classes := opts.Classes
	if len(classes) == 0 {
		classes = []string{DefaultClass}
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slotgate_requests_total",
		Help: "Requests that went through admission, by how they ended, their policy class and the protocol they came by (http, grpc).",
	}, []string{"outcome", "class", "protocol"})
	queueWait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slotgate_queue_wait_seconds",
		Help:    "Time admitted requests waited for an engine slot (0 when one was free), and time refused ones spent queued, by policy class.",
		Buckets: waitBuckets,
	}, []string{"class"})
	m := &Metrics{
		requests:  make(map[series]prometheus.Counter, len(opts.Outcomes)*len(classes)*len(opts.Protocols)),
		queueWait: make(map[string]prometheus.Observer, len(classes)),
		firstByte: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "slotgate_time_to_first_byte_seconds",
			Help:    "Time from a request's arrival, queue wait included, to the first byte of the engine's response.",
			Buckets: waitBuckets,
		}),
		admission: newAdmissionCounters(),
	}
	for _, c := range classes {
		m.queueWait[c] = queueWait.WithLabelValues(c)
		for _, o := range opts.Outcomes {
			for _, p := range opts.Protocols {
				m.requests[series{o, c, p}] = requests.WithLabelValues(o, c, p)
			}
		}
	}
	cs := []prometheus.Collector{
		requests, queueWait, m.firstByte,
		newLimiterCollector(opts.Limiter),
		buildInfo(opts.Version, opts.Revision),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	cs = append(cs, m.admission.collectors...)
	if opts.Load != nil {
		cs = append(cs, newLoadCollector(opts.Load))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// waitBuckets span a millisecond to ten minutes: LLM queues and streams need
// far more than prometheus.DefBuckets' 10 s.
var waitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// RequestDone counts one request under its outcome, class and protocol:
// one lookup of a series resolved by New, no allocation. An outcome,
// class or protocol not given to New is a programming error and is
// dropped rather than crash a request.
func (m *Metrics) RequestDone(outcome, class, protocol string) {
	if c, ok := m.requests[series{outcome, class, protocol}]; ok {
		c.Inc()
	}
}

// QueueWait observes one queue wait of a request of class.
func (m *Metrics) QueueWait(class string, seconds float64) {
	if o, ok := m.queueWait[class]; ok {
		o.Observe(seconds)
	}
}

// FirstByte observes one time to first byte.
func (m *Metrics) FirstByte(seconds float64) { m.firstByte.Observe(seconds) }

// Handler serves the metrics gathered by g.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

func buildInfo(version, revision string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slotgate_build_info",
		Help: "A metric with a constant '1' value labelled by the slotgate version and revision.",
	}, []string{"version", "revision"})
	g.WithLabelValues(version, revision).Set(1)
	return g
}
