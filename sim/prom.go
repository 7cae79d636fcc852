package sim

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricDef is one metric family read from the engine's stats at scrape
// time: one or more samples per rank.
type metricDef struct {
	desc    *prometheus.Desc
	typ     prometheus.ValueType
	samples func(RankStats) []sample
}

// sample is one series of a rank: its value and the label values that
// follow the rank label.
type sample struct {
	value  float64
	labels []string
}

// one is a metric with a single series per rank.
func one(f func(RankStats) float64) func(RankStats) []sample {
	return func(s RankStats) []sample { return []sample{{value: f(s)}} }
}

// always1 is an info metric's value.
func always1(RankStats) float64 { return 1 }

// collector exports metricDefs from one Stats snapshot per scrape, so the
// series of a scrape agree with each other.
type collector struct {
	stats func() Stats
	defs  []metricDef
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.defs {
		ch <- d.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, d := range c.defs {
		for _, rs := range st.Ranks {
			for _, smp := range d.samples(rs) {
				labels := append([]string{strconv.Itoa(rs.Rank)}, smp.labels...)
				m, err := prometheus.NewConstMetric(d.desc, d.typ, smp.value, labels...)
				if err != nil {
					m = prometheus.NewInvalidMetric(d.desc, err)
				}
				ch <- m
			}
		}
	}
}

// addPrometheus registers the dialect's collector and enginesim's own on
// reg and serves reg at GET /metrics.
func (s *server) addPrometheus(rt router, reg *prometheus.Registry, defs []metricDef) error {
	for _, c := range []prometheus.Collector{&collector{stats: s.engine.Stats, defs: defs}, newOwnCollector(s.engine, s.faults)} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("sim: register %s metrics: %w", s.dialect, err)
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	rt.add(http.MethodGet, "/metrics", h.ServeHTTP)
	return nil
}
