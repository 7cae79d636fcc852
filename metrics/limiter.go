package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotgate/slotgate/limiter"
)

// Dynamo's help strings, byte for byte (lib/runtime/src/metrics/work_handler_pool.rs).
const (
	helpRejection = "Requests rejected because the worker is at capacity (engine in-flight limit and Dynamo queue both full)"
	helpEngine    = "Current number of requests being handled by the engine (--engine-request-limit)"
	helpQueue     = "Current number of requests queued in Dynamo not yet in the engine (--dynamo-request-queue-limit)"
)

// limiterCollector reads one limiter.Stats per scrape and exposes it,
// under both Dynamo 1.5's names and 1.7's backend admission family.
type limiterCollector struct {
	stats     func() limiter.Stats
	admission *admissionGauges

	rejections, engine, queue, slotLimit, queueLimit, classQueue *prometheus.Desc
	prefillTokens, queuedTokens                                  *prometheus.Desc
}

// Help of the token gauges. Without a token limit slotgate does not count
// an HTTP request's tokens, so they read 0 then.
const (
	helpPrefillTokens = "Prompt tokens of the requests admitted to the engine that have not had their first token yet " +
		"(those bounded by --engine-prefill-token-limit), all ranks together; 0 while no token limit is set, as tokens are not counted then."
	helpQueuedTokens = "Prompt tokens of the requests waiting in slotgate's queue " +
		"(those bounded by --request-queue-token-limit), all ranks together; 0 while no token limit is set, as tokens are not counted then."
)

func newLimiterCollector(stats func() limiter.Stats) *limiterCollector {
	return &limiterCollector{
		stats:      stats,
		admission:  newAdmissionGauges(),
		rejections: prometheus.NewDesc("dynamo_rejection_request_total", helpRejection, nil, nil),
		engine:     prometheus.NewDesc("dynamo_engine_request", helpEngine, nil, nil),
		queue:      prometheus.NewDesc("dynamo_request_queue", helpQueue, nil, nil),
		slotLimit: prometheus.NewDesc("slotgate_engine_request_limit",
			"N, the engine slots (--engine-request-limit); 0 when no limit is set.", nil, nil),
		queueLimit: prometheus.NewDesc("slotgate_request_queue_limit",
			"Q, the places in the overflow queue (DYN_DYNAMO_REQUEST_QUEUE_LIMIT); 0 when no limit is set.", nil, nil),
		classQueue: prometheus.NewDesc("slotgate_request_queue_class",
			"Requests waiting in the queue of each policy class; they add up to dynamo_request_queue.", []string{"class"}, nil),
		prefillTokens: prometheus.NewDesc("slotgate_prefill_tokens", helpPrefillTokens, nil, nil),
		queuedTokens:  prometheus.NewDesc("slotgate_queued_tokens", helpQueuedTokens, nil, nil),
	}
}

func (c *limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rejections
	ch <- c.engine
	ch <- c.queue
	ch <- c.slotLimit
	ch <- c.queueLimit
	ch <- c.classQueue
	ch <- c.prefillTokens
	ch <- c.queuedTokens
	c.admission.describe(ch)
}

func (c *limiterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.rejections, prometheus.CounterValue, float64(s.RejectedFull))
	ch <- prometheus.MustNewConstMetric(c.engine, prometheus.GaugeValue, float64(s.Holding))
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(s.Waiting))
	ch <- prometheus.MustNewConstMetric(c.slotLimit, prometheus.GaugeValue, float64(s.Slots))
	ch <- prometheus.MustNewConstMetric(c.queueLimit, prometheus.GaugeValue, float64(s.QueueLen))
	ch <- prometheus.MustNewConstMetric(c.prefillTokens, prometheus.GaugeValue, float64(s.PrefillTokens))
	ch <- prometheus.MustNewConstMetric(c.queuedTokens, prometheus.GaugeValue, float64(s.QueuedTokens))
	for _, cs := range s.Classes {
		name := cs.Name
		if name == "" { // the one queue of a limiter without classes
			name = DefaultClass
		}
		ch <- prometheus.MustNewConstMetric(c.classQueue, prometheus.GaugeValue, float64(cs.Waiting), name)
	}
	c.admission.collect(ch, &s)
}
