package metrics

import "github.com/prometheus/client_golang/prometheus"

// Relay exports the stream relay's counts (--stream-relay epoll), read at
// each scrape: slotgate_relay_streams, the answers it carries now,
// slotgate_relay_streams_total, those handed to it since start, and
// slotgate_relay_idle_connections, the clients it keeps after their
// stream, or after a run of refusals, until their next request. open,
// added and idle read them; the command registers it only with the relay
// on.
func Relay(open func() int, added func() uint64, idle func() int) prometheus.Collector {
	return &relayCollector{
		open: open, added: added, idle: idle,
		idleDesc: prometheus.NewDesc("slotgate_relay_idle_connections",
			"Client connections the relay keeps between requests, after their stream ended or a run of refusals, until a request it does not answer, a hang-up or the idle timeout (--stream-relay epoll).", nil, nil),
		openDesc: prometheus.NewDesc("slotgate_relay_streams",
			"Streamed answers the relay's event loops carry now (--stream-relay epoll).", nil, nil),
		addedDesc: prometheus.NewDesc("slotgate_relay_streams_total",
			"Streamed answers handed to the relay's event loops since start (--stream-relay epoll).", nil, nil),
	}
}

type relayCollector struct {
	open, idle                    func() int
	added                         func() uint64
	openDesc, addedDesc, idleDesc *prometheus.Desc
}

func (c *relayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.openDesc
	ch <- c.addedDesc
	ch <- c.idleDesc
}

func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.openDesc, prometheus.GaugeValue, float64(c.open()))
	ch <- prometheus.MustNewConstMetric(c.addedDesc, prometheus.CounterValue, float64(c.added()))
	ch <- prometheus.MustNewConstMetric(c.idleDesc, prometheus.GaugeValue, float64(c.idle()))
}
