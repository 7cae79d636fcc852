package orcagrpc

import (
	"sync"
	"sync/atomic"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/protobuf/proto"

	"github.com/slotgate/slotgate/load/report"
)

// TrailerKey is the trailer metadata key of a per-call load report, a
// serialized OrcaLoadReport (gRFC A51; grpc-go's and Envoy's name). gRPC
// base64-encodes its value on the wire, as for every "-bin" key.
const TrailerKey = "endpoint-load-metrics-bin"

// RateWindow is the shortest span rps_fractional is measured over: the
// rate is measured again at the first snapshot at least RateWindow after
// the last measurement, so it is the rate over the last RateWindow or a
// little more. The Hub publishes at least once a second (report.Heartbeat),
// so the rate is never more than about two seconds old.
const RateWindow = time.Second

// Options configure a Reporter.
type Options struct {
	// Admitted returns the number of requests admitted so far, a counter
	// that never decreases (the limiters' AdmittedDirect+AdmittedQueued).
	// Update calls it once per snapshot. Nil: rps_fractional is unset.
	Admitted func() uint64
}

// Reporter keeps the latest load report, made from the snapshots given to
// Update. Update is called by the snapshots' publisher; the readers
// (Report, ServerMetrics, Trailer, Header) are safe from any goroutine and never
// wait for it.
type Reporter struct {
	admitted func() uint64

	mu   sync.Mutex // serializes Update, and guards rate
	rate rate

	cur atomic.Pointer[current]
}

// current is the latest report in each form; immutable once stored.
type current struct {
	metrics *orca.ServerMetrics
	report  *v3orcapb.OrcaLoadReport
	bin     string // report, serialized, for the trailer; "" when it failed
	// headers is the report in each form of the HTTP header, indexed by
	// Format.
	headers [formats]string
}

// NewReporter returns a Reporter whose report is empty, every value
// unset, until the first Update.
func NewReporter(opts Options) *Reporter {
	r := &Reporter{admitted: opts.Admitted}
	r.store(empty())
	return r
}

// Update makes the report of s, the snapshot just published, and of the
// admissions counted since the last measurement of the rate. s.At stamps
// the count. Updates must come in the snapshots' order; concurrent calls
// are serialized.
func (r *Reporter) Update(s *report.Snapshot) {
	sm := Metrics(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.admitted != nil {
		sm.QPS = r.rate.observe(s.At, r.admitted())
	}
	r.store(sm)
}

// store makes sm the current report; sm is not modified afterwards.
func (r *Reporter) store(sm *orca.ServerMetrics) {
	c := &current{metrics: sm, report: toProto(sm)}
	// Deterministic: the same load gives the same bytes. Marshal cannot
	// fail on this message (its only strings are the metric names, valid
	// UTF-8); were it to, Trailer would send nothing.
	b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(c.report)
	if err == nil {
		c.bin = string(b)
	}
	c.headers = headerForms(sm, c.report, b)
	r.cur.Store(c)
}

// Report returns the latest report. It is shared: the caller must not
// modify it.
func (r *Reporter) Report() *v3orcapb.OrcaLoadReport { return r.cur.Load().report }

// ServerMetrics returns the latest report in grpc-go's form, a copy the
// caller may modify. It makes the Reporter an orca.ServerMetricsProvider,
// for grpc-go's orca.CallMetricsServerOption or orca.Register.
func (r *Reporter) ServerMetrics() *orca.ServerMetrics { return clone(r.cur.Load().metrics) }

// QPS is the latest report's requests admitted per second, -1 while it is
// unset: what ServerMetrics().QPS says, without copying the report.
func (r *Reporter) QPS() float64 { return r.cur.Load().metrics.QPS }

// Trailer returns the latest report as per-call trailer metadata, one
// TrailerKey pair holding the serialized OrcaLoadReport, as grpc-go's
// orca.CallMetricsServerOption sends it; nil if serializing failed. Each
// call returns a new MD, which the caller may modify. A proxy that sends
// it must drop the engine's own TrailerKey: a gRPC client fails on two.
func (r *Reporter) Trailer() metadata.MD {
	bin := r.cur.Load().bin
	if bin == "" {
		return nil
	}
	return metadata.MD{TrailerKey: []string{bin}}
}

// Header returns the latest report as the value of the HTTP header
// HeaderKey in the form f (TEXT for a Format out of range). The forms are
// rendered once per Update, so this only reads.
func (r *Reporter) Header(f Format) string {
	if f >= formats {
		f = FormatText
	}
	return r.cur.Load().headers[f]
}

// Interface guard: a Reporter provides grpc-go's server metrics.
var _ orca.ServerMetricsProvider = (*Reporter)(nil)

// rate measures a counter's rate over windows of at least RateWindow.
type rate struct {
	started bool
	at      time.Time // start of the window
	count   uint64    // the counter then
	perSec  float64   // the last window's rate
}

// observe records the counter n at time at and returns the rate of the
// last complete window: 0 until one is complete. A counter that went back
// (it cannot) or a clock that did restarts the window.
func (r *rate) observe(at time.Time, n uint64) float64 {
	switch elapsed := at.Sub(r.at); {
	case !r.started || n < r.count || elapsed < 0:
		r.started, r.at, r.count = true, at, n
	case elapsed >= RateWindow:
		r.perSec = float64(n-r.count) / elapsed.Seconds()
		r.at, r.count = at, n
	}
	return r.perSec
}
