package metrics

import "github.com/prometheus/client_golang/prometheus"

// Readiness exports what /readyz answers as gauges, read at each scrape:
// slotgate_ready (1 while /readyz answers 200) and slotgate_draining (1
// from the moment a drain began). Alerts and dashboards then see a
// sidecar that is up but not ready, which a scrape's `up` cannot tell.
// ready is /readyz's check (nil when ready); draining reports whether a
// drain began. The command registers it once both exist.
func Readiness(ready func() error, draining func() bool) prometheus.Collector {
	return &readinessCollector{
		ready: ready, draining: draining,
		readyDesc: prometheus.NewDesc("slotgate_ready",
			"1 while /readyz answers 200: the engine answered its health path recently and slotgate is not draining; else 0.", nil, nil),
		drainingDesc: prometheus.NewDesc("slotgate_draining",
			"1 from the moment a drain began (SIGTERM, POST /drain), else 0.", nil, nil),
	}
}

type readinessCollector struct {
	ready                   func() error
	draining                func() bool
	readyDesc, drainingDesc *prometheus.Desc
}

func (c *readinessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.readyDesc
	ch <- c.drainingDesc
}

func (c *readinessCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.readyDesc, prometheus.GaugeValue, b2f(c.ready() == nil))
	ch <- prometheus.MustNewConstMetric(c.drainingDesc, prometheus.GaugeValue, b2f(c.draining()))
}
