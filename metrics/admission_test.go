package metrics_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/metrics"
)

// backendAdmissionFamily is every family of Dynamo 1.7's backend admission
// metrics that slotgate exports, in name order.
var backendAdmissionFamily = []string{
	"dynamo_backend_admission_cancellation_total",
	"dynamo_backend_admission_dequeue_total",
	"dynamo_backend_admission_engine_request_count",
	"dynamo_backend_admission_engine_request_limit",
	"dynamo_backend_admission_engine_wait_count",
	"dynamo_backend_admission_engine_wait_limit",
	"dynamo_backend_admission_rejection_total",
	"dynamo_backend_admission_request_admit_total",
	"dynamo_backend_admission_request_queue_count",
	"dynamo_backend_admission_request_queue_limit",
	"dynamo_backend_admission_request_receive_total",
}

// backendAdmissionExposition is the family before any request, with the
// gauges and limits formatted from engine, wait, queue, engineLimit,
// waitLimit, queueLimit, and dequeue_total from fifo and lifo. The help
// strings of Dynamo's seven are Dynamo's, byte for byte
// (lib/runtime/src/metrics/backend_admission.rs).
const backendAdmissionExposition = `
# HELP dynamo_backend_admission_cancellation_total Requests cancelled before backend admission
# TYPE dynamo_backend_admission_cancellation_total counter
dynamo_backend_admission_cancellation_total 0
# HELP dynamo_backend_admission_dequeue_total Requests taken from the backend admission queue, by the order that chose them
# TYPE dynamo_backend_admission_dequeue_total counter
dynamo_backend_admission_dequeue_total{source="adaptive_lifo"} %[8]v
dynamo_backend_admission_dequeue_total{source="fifo"} %[7]v
# HELP dynamo_backend_admission_engine_request_count Requests admitted to the engine that have not finished, including those that have already produced their first response
# TYPE dynamo_backend_admission_engine_request_count gauge
dynamo_backend_admission_engine_request_count %[1]v
# HELP dynamo_backend_admission_engine_request_limit Limit on requests admitted to the engine that have not finished (the engine request limit, N); 0 when unset
# TYPE dynamo_backend_admission_engine_request_limit gauge
dynamo_backend_admission_engine_request_limit %[4]v
# HELP dynamo_backend_admission_engine_wait_count Requests admitted to the engine that are still awaiting their first engine response
# TYPE dynamo_backend_admission_engine_wait_count gauge
dynamo_backend_admission_engine_wait_count %[2]v
# HELP dynamo_backend_admission_engine_wait_limit Limit on requests admitted to the engine that are still awaiting their first engine response (the engine request waiting limit, W); 0 when unset
# TYPE dynamo_backend_admission_engine_wait_limit gauge
dynamo_backend_admission_engine_wait_limit %[5]v
# HELP dynamo_backend_admission_rejection_total Requests rejected by the backend admission gate because they could not be admitted and its queue was full
# TYPE dynamo_backend_admission_rejection_total counter
dynamo_backend_admission_rejection_total{reason="queue_full"} 0
dynamo_backend_admission_rejection_total{reason="queue_tokens"} 0
dynamo_backend_admission_rejection_total{reason="request_expired"} 0
# HELP dynamo_backend_admission_request_admit_total Requests passed into the engine by the backend admission gate, by whether they waited in its queue
# TYPE dynamo_backend_admission_request_admit_total counter
dynamo_backend_admission_request_admit_total{source="direct"} 0
dynamo_backend_admission_request_admit_total{source="queue"} 0
# HELP dynamo_backend_admission_request_queue_count Requests currently waiting in the backend admission queue
# TYPE dynamo_backend_admission_request_queue_count gauge
dynamo_backend_admission_request_queue_count %[3]v
# HELP dynamo_backend_admission_request_queue_limit Limit on requests waiting in the backend admission queue (the request queue limit, Q); 0 when unset, which means no queue
# TYPE dynamo_backend_admission_request_queue_limit gauge
dynamo_backend_admission_request_queue_limit %[6]v
# HELP dynamo_backend_admission_request_receive_total Requests received by the backend admission gate
# TYPE dynamo_backend_admission_request_receive_total counter
dynamo_backend_admission_request_receive_total 0
`

// TestBackendAdmissionExposition pins the whole family before any request:
// names, types, help strings, label sets, every series present, and each
// gauge reading its own field of the limiter snapshot.
func TestBackendAdmissionExposition(t *testing.T) {
	tests := []struct {
		name  string
		stats func() limiter.Stats
		want  []any // engine, wait, queue, engine limit, wait limit, queue limit, fifo, lifo
	}{
		{"zero snapshot", func() limiter.Stats { return limiter.Stats{} }, []any{0, 0, 0, 0, 0, 0, 0, 0}},
		{"unlimited limiter", limiter.NewUnlimited().Stats, []any{0, 0, 0, 0, 0, 0, 0, 0}},
		{"every field distinct", fixed, []any{3, 2, 5, 4, 6, 8, 12, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reg := newMetrics(t, tt.stats)
			want := fmt.Sprintf(backendAdmissionExposition, tt.want...)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), backendAdmissionFamily...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBackendAdmissionFamilyHasNoOtherMembers: nothing else is exported
// under the dynamo_backend_admission_ prefix.
func TestBackendAdmissionFamilyHasNoOtherMembers(t *testing.T) {
	_, reg := newMetrics(t, fixed)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "dynamo_backend_admission_") {
			got = append(got, mf.GetName())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, backendAdmissionFamily) {
		t.Errorf("dynamo_backend_admission_ families:\n got %v\nwant %v", got, backendAdmissionFamily)
	}
}

// decidedSeries says where Decided counts each outcome of gate.Outcomes.
var decidedSeries = map[gate.Outcome]string{
	gate.AdmittedDirect:       "admit{source=direct}",
	gate.AdmittedQueued:       "admit{source=queue}",
	gate.RejectedCapacity:     "rejection{reason=queue_full}",
	gate.RejectedQueueTimeout: "rejection{reason=request_expired}",
	gate.RejectedQueueExpired: "rejection{reason=request_expired}",
	gate.RejectedPolicy:       "cancellation",
	gate.RejectedRateLimited:  "cancellation",
	gate.RejectedBusy:         "cancellation",
	gate.RejectedUnavailable:  "cancellation",
	gate.RejectedDraining:     "cancellation",
	gate.RejectedTooLarge:     "cancellation",
	gate.RejectedBadRequest:   "cancellation",
	gate.RejectedBodyTimeout:  "cancellation",
	gate.RejectedQueueTokens:  "rejection{reason=queue_tokens}",
	gate.CancelledQueued:      "cancellation",
	gate.CancelledRunning:     "cancellation",
	gate.EngineError:          "cancellation",
	gate.FirstTokenTimeout:    "cancellation",
}

// TestDecidedCountsEachOutcomeOnce: every outcome of gate.Outcomes lands in
// receive_total and in exactly one other series, and nothing else moves.
func TestDecidedCountsEachOutcomeOnce(t *testing.T) {
	for _, o := range gate.Outcomes() {
		t.Run(o, func(t *testing.T) {
			series, ok := decidedSeries[gate.Outcome(o)]
			if !ok {
				t.Fatalf("outcome %q has no expected series: classify it in decidedSeries", o)
			}
			m, reg := newMetrics(t, fixed)
			m.Received()
			m.Decided(o)
			got := admissionCounts(t, reg)
			if len(got) != 7 || got[series] != 1 {
				t.Fatalf("after Decided(%q): %v, want seven series with %s at 1", o, got, series)
			}
			for key, v := range got {
				want := 0.0
				if key == "receive" || key == series {
					want = 1
				}
				if v != want {
					t.Errorf("after Decided(%q): %s = %v, want %v", o, key, v, want)
				}
			}
		})
	}
}

// TestDecidedUnknownOutcomeIsACancellation: an outcome the gate does not
// name still keeps receive_total the sum of the other three.
func TestDecidedUnknownOutcomeIsACancellation(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	for _, o := range []string{"", "no_such_outcome", string(gate.Passthrough)} {
		m.Received()
		m.Decided(o)
	}
	got := admissionCounts(t, reg)
	if got["receive"] != 3 || got["cancellation"] != 3 {
		t.Errorf("receive = %v, cancellation = %v after three unknown outcomes, want 3 and 3", got["receive"], got["cancellation"])
	}
}

// TestDecidedReceiveIsTheSum: over a mix of every outcome, receive_total
// equals admit_total + rejection_total + cancellation_total.
func TestDecidedReceiveIsTheSum(t *testing.T) {
	m, reg := newMetrics(t, fixed)
	want := map[string]float64{}
	for i, o := range gate.Outcomes() {
		for range i + 1 {
			m.Received()
			m.Decided(o)
			want[decidedSeries[gate.Outcome(o)]]++
			want["receive"]++
		}
	}
	got := admissionCounts(t, reg)
	sum := 0.0
	for key, v := range got {
		if v != want[key] {
			t.Errorf("%s = %v, want %v", key, v, want[key])
		}
		if key != "receive" {
			sum += v
		}
	}
	if got["receive"] != sum {
		t.Errorf("receive = %v, but admit + rejection + cancellation = %v", got["receive"], sum)
	}
}

// TestDecidedAllocatesNothing: Decided runs on the request path.
func TestDecidedAllocatesNothing(t *testing.T) {
	m, _ := newMetrics(t, fixed)
	for _, o := range append(gate.Outcomes(), "no_such_outcome") {
		if n := testing.AllocsPerRun(100, func() { m.Decided(o) }); n != 0 {
			t.Errorf("Decided(%q) allocates %v times per call, want 0", o, n)
		}
	}
}

func BenchmarkDecided(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{Limiter: fixed, Outcomes: gate.Outcomes(), Protocols: gate.Protocols()})
	if err != nil {
		b.Fatal(err)
	}
	outcomes := gate.Outcomes()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Decided(outcomes[i%len(outcomes)])
			i++
		}
	})
}

// TestBackendAdmissionGaugesFollowLiveLimiter drives a real limiter (N=2,
// W=1, Q=1): the second request waits for the first one's first token, not
// for its slot.
func TestBackendAdmissionGaugesFollowLiveLimiter(t *testing.T) {
	l, err := limiter.New(limiter.Options{Slots: 2, WaitingLimit: 1, QueueLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, reg := newMetrics(t, l.Stats)

	check := func(step string, engine, wait, queue, fifo int) {
		t.Helper()
		want := fmt.Sprintf(backendAdmissionExposition, engine, wait, queue, 2, 1, 1, fifo, 0)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"dynamo_backend_admission_engine_request_count", "dynamo_backend_admission_engine_wait_count",
			"dynamo_backend_admission_request_queue_count", "dynamo_backend_admission_engine_request_limit",
			"dynamo_backend_admission_engine_wait_limit", "dynamo_backend_admission_request_queue_limit",
			"dynamo_backend_admission_dequeue_total"); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	check("idle", 0, 0, 0, 0)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("one admitted, before its first token", 1, 1, 0, 0)

	type acquired struct {
		permit *limiter.Permit
		err    error
	}
	result := make(chan acquired, 1)
	go func() {
		p, err := l.Acquire(ctx)
		result <- acquired{p, err}
	}()
	waitFor(t, "a waiter", func() bool { return l.Stats().Waiting == 1 })
	check("W full, one queued", 1, 1, 1, 0)

	first.FirstToken() // frees the waiting place, which admits the waiter
	var second acquired
	select {
	case second = <-result:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not admitted within 5s of the first token")
	}
	if second.err != nil {
		t.Fatalf("waiter: %v", second.err)
	}
	check("first streaming, second admitted from the queue", 2, 1, 0, 1)

	second.permit.FirstToken()
	check("both streaming", 2, 0, 0, 1)

	first.Release()
	check("one finished", 1, 0, 0, 1)

	second.permit.Release()
	check("idle again", 0, 0, 0, 1)
}

// Helpers.

// lint fails t on every promlint problem but those Dynamo's names force:
// three of its backend admission gauges end in _count.
func lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	const countSuffix = `non-histogram and non-summary metrics should not have "_count" suffix`
	exempt := []string{
		"dynamo_backend_admission_engine_request_count",
		"dynamo_backend_admission_engine_wait_count",
		"dynamo_backend_admission_request_queue_count",
	}
	for _, p := range problems {
		if p.Text == countSuffix && slices.Contains(exempt, p.Metric) {
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// admissionCounts returns the counters Decided feeds, keyed "receive",
// "admit{source=…}", "rejection{reason=…}" and "cancellation", and fails
// t if a series has any other label.
func admissionCounts(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families := []struct{ key, name, label string }{
		{"receive", "dynamo_backend_admission_request_receive_total", ""},
		{"admit", "dynamo_backend_admission_request_admit_total", "source"},
		{"rejection", "dynamo_backend_admission_rejection_total", "reason"},
		{"cancellation", "dynamo_backend_admission_cancellation_total", ""},
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range gather(t, reg, f.name).GetMetric() {
			key, l := f.key, m.GetLabel()
			switch {
			case f.label == "" && len(l) == 0:
			case f.label != "" && len(l) == 1 && l[0].GetName() == f.label:
				key += "{" + f.label + "=" + l[0].GetValue() + "}"
			default:
				t.Fatalf("%s series with labels %v", f.name, l)
			}
			out[key] = m.GetCounter().GetValue()
		}
	}
	return out
}

// dequeueCounts returns dequeue_total by source.
func dequeueCounts(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range gather(t, reg, "dynamo_backend_admission_dequeue_total").GetMetric() {
		l := m.GetLabel()
		if len(l) != 1 || l[0].GetName() != "source" {
			t.Fatalf("dequeue_total series with labels %v", l)
		}
		out[l[0].GetValue()] = m.GetCounter().GetValue()
	}
	return out
}

// TestDequeueBySource: the queue's admissions split by the order that
// chose them, from one limiter snapshot.
func TestDequeueBySource(t *testing.T) {
	tests := []struct {
		name       string
		stats      limiter.Stats
		fifo, lifo float64
	}{
		{"none", limiter.Stats{}, 0, 0},
		{"FIFO only", limiter.Stats{AdmittedQueued: 5}, 5, 0},
		{"some by adaptive LIFO", limiter.Stats{AdmittedQueued: 5, DequeuedLIFO: 2}, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reg := newMetrics(t, func() limiter.Stats { return tt.stats })
			got := dequeueCounts(t, reg)
			if got["fifo"] != tt.fifo || got["adaptive_lifo"] != tt.lifo || len(got) != 2 {
				t.Errorf("dequeue_total = %v, want fifo %v, adaptive_lifo %v", got, tt.fifo, tt.lifo)
			}
		})
	}
}
