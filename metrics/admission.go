package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotgate/slotgate/limiter"
)

// Dynamo 1.7's backend admission help strings, byte for byte
// (lib/runtime/src/metrics/backend_admission.rs).
const (
	helpEngineRequestCount = "Requests admitted to the engine that have not finished, including those that have already produced their first response"
	helpEngineWaitCount    = "Requests admitted to the engine that are still awaiting their first engine response"
	helpRequestQueueCount  = "Requests currently waiting in the backend admission queue"
	helpReceive            = "Requests received by the backend admission gate"
	helpAdmit              = "Requests passed into the engine by the backend admission gate, by whether they waited in its queue"
	helpAdmissionRejection = "Requests rejected by the backend admission gate because they could not be admitted and its queue was full"
	helpCancellation       = "Requests cancelled before backend admission"
)

// Names and help strings of the limits and dequeue order (Dynamo PR
// #14369, plus the engine waiting limit W, which that PR lacks).
const (
	helpEngineRequestLimit = "Limit on requests admitted to the engine that have not finished (the engine request limit, N); 0 when unset"
	helpEngineWaitLimit    = "Limit on requests admitted to the engine that are still awaiting their first engine response (the engine request waiting limit, W); 0 when unset"
	helpRequestQueueLimit  = "Limit on requests waiting in the backend admission queue (the request queue limit, Q); 0 when unset, which means no queue"
	helpDequeue            = "Requests taken from the backend admission queue, by the order that chose them"
)

// The gate outcomes that Decided tells apart (gate.Outcomes; metrics does
// not import gate).
const (
	outcomeAdmittedDirect       = "admitted_direct"
	outcomeAdmittedQueued       = "admitted_queued"
	outcomeRejectedCapacity     = "rejected_capacity"
	outcomeRejectedQueueTimeout = "rejected_queue_timeout"
	outcomeRejectedQueueExpired = "rejected_queue_expired"
	outcomeRejectedQueueTokens  = "rejected_queue_tokens"
)

// admissionGauges are Dynamo 1.7's backend admission gauges, the limits and
// the dequeue counter: everything of the family that is read from a
// limiter.Stats. The limiterCollector feeds them the same snapshot as the
// 1.5 names, so that the gauges of one scrape agree.
type admissionGauges struct {
	engineRequests, engineWaits, queue              *prometheus.Desc
	engineRequestLimit, engineWaitLimit, queueLimit *prometheus.Desc
	dequeue                                         *prometheus.Desc
}

func newAdmissionGauges() *admissionGauges {
	gauge := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("dynamo_backend_admission_"+name, help, nil, nil)
	}
	return &admissionGauges{
		engineRequests:     gauge("engine_request_count", helpEngineRequestCount),
		engineWaits:        gauge("engine_wait_count", helpEngineWaitCount),
		queue:              gauge("request_queue_count", helpRequestQueueCount),
		engineRequestLimit: gauge("engine_request_limit", helpEngineRequestLimit),
		engineWaitLimit:    gauge("engine_wait_limit", helpEngineWaitLimit),
		queueLimit:         gauge("request_queue_limit", helpRequestQueueLimit),
		dequeue: prometheus.NewDesc("dynamo_backend_admission_dequeue_total", helpDequeue,
			[]string{"source"}, nil),
	}
}

func (g *admissionGauges) describe(ch chan<- *prometheus.Desc) {
	ch <- g.engineRequests
	ch <- g.engineWaits
	ch <- g.queue
	ch <- g.engineRequestLimit
	ch <- g.engineWaitLimit
	ch <- g.queueLimit
	ch <- g.dequeue
}

func (g *admissionGauges) collect(ch chan<- prometheus.Metric, s *limiter.Stats) {
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(g.engineRequests, s.Holding)
	gauge(g.engineWaits, s.Prefilling)
	gauge(g.queue, s.Waiting)
	gauge(g.engineRequestLimit, s.Slots)
	gauge(g.engineWaitLimit, s.WaitingLimit)
	gauge(g.queueLimit, s.QueueLen)
	// The limiter reads AdmittedQueued and DequeuedLIFO from the same
	// counters at once, so their difference only ever grows.
	ch <- prometheus.MustNewConstMetric(g.dequeue, prometheus.CounterValue, float64(s.AdmittedQueued-s.DequeuedLIFO), "fifo")
	ch <- prometheus.MustNewConstMetric(g.dequeue, prometheus.CounterValue, float64(s.DequeuedLIFO), "adaptive_lifo")
}

// admissionCounters are Dynamo 1.7's backend admission counters, fed by
// Decided. Each series is resolved once here, so that Decided, which runs
// on the request path, only switches on the outcome and increments.
type admissionCounters struct {
	receive, admitDirect, admitQueue prometheus.Counter
	rejectFull, rejectExpired        prometheus.Counter
	rejectTokens                     prometheus.Counter
	cancel                           prometheus.Counter

	collectors []prometheus.Collector
}

func newAdmissionCounters() *admissionCounters {
	receive := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dynamo_backend_admission_request_receive_total", Help: helpReceive,
	})
	admit := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_backend_admission_request_admit_total", Help: helpAdmit,
	}, []string{"source"})
	// The reason label is slotgate's, as proposed in Dynamo PR #14369: 1.7
	// has only queue_full, and no queue deadline.
	rejection := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_backend_admission_rejection_total", Help: helpAdmissionRejection,
	}, []string{"reason"})
	cancel := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dynamo_backend_admission_cancellation_total", Help: helpCancellation,
	})
	return &admissionCounters{
		receive:       receive,
		admitDirect:   admit.WithLabelValues("direct"),
		admitQueue:    admit.WithLabelValues("queue"),
		rejectFull:    rejection.WithLabelValues("queue_full"),
		rejectExpired: rejection.WithLabelValues("request_expired"),
		rejectTokens:  rejection.WithLabelValues("queue_tokens"),
		cancel:        cancel,
		collectors:    []prometheus.Collector{receive, admit, rejection, cancel},
	}
}

// Received counts a request that reached the backend admission gate, as
// it arrives, whatever then becomes of it.
func (m *Metrics) Received() { m.admission.receive.Inc() }

// Decided counts how the admission of a request that reached the gate was
// decided, in exactly one of Dynamo 1.7's counters: an admission (direct
// or queue), a refusal for capacity (queue_full, request_expired when it
// waited past its deadline, or queue_tokens, slotgate's, when its tokens
// would pass the queue's token limit), or, for any other outcome, a request that
// left the queue otherwise, a cancellation. Once every request received
// is decided, receive_total is the sum of the other three.
func (m *Metrics) Decided(outcome string) {
	a := m.admission
	switch outcome {
	case outcomeAdmittedDirect:
		a.admitDirect.Inc()
	case outcomeAdmittedQueued:
		a.admitQueue.Inc()
	case outcomeRejectedCapacity:
		a.rejectFull.Inc()
	case outcomeRejectedQueueTimeout, outcomeRejectedQueueExpired:
		a.rejectExpired.Inc()
	case outcomeRejectedQueueTokens:
		a.rejectTokens.Inc()
	default:
		a.cancel.Inc()
	}
}
