package orcagrpc_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/protobuf/proto"

	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/load/report"
)

// t0 is the tests' first snapshot time.
var t0 = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// slots is a snapshot of n requests in flight out of 4 slots, at.
func slots(n int, at time.Time) *report.Snapshot {
	return &report.Snapshot{At: at, Requests: report.Requests{InFlight: n, Limit: 4}, Ranks: []report.Rank{{}}}
}

func TestReporterEmptyUntilUpdate(t *testing.T) {
	r := orcagrpc.NewReporter(orcagrpc.Options{})
	if got := r.Report(); !proto.Equal(got, &v3orcapb.OrcaLoadReport{}) {
		t.Errorf("Report before Update = %v, want empty", got)
	}
	sm := r.ServerMetrics()
	if sm.AppUtilization != -1 || sm.QPS != -1 || len(sm.NamedMetrics) != 0 || sm.Utilization == nil || sm.RequestCost == nil {
		t.Errorf("ServerMetrics before Update = %+v, want every value unset and empty maps", sm)
	}
	r.Update(slots(1, t0))
	if got := r.ServerMetrics().QPS; got != -1 {
		t.Errorf("QPS without an Admitted counter = %v, want unset", got)
	}
}

// TestReporterRate: rps_fractional is the admissions of the last complete
// window of at least RateWindow, measured on the snapshots' times.
func TestReporterRate(t *testing.T) {
	var admitted uint64
	r := orcagrpc.NewReporter(orcagrpc.Options{Admitted: func() uint64 { return admitted }})
	steps := []struct {
		name    string
		after   time.Duration // since t0
		count   uint64
		wantRPS float64
	}{
		{"first snapshot: no window yet", 0, 100, 0},
		{"window not over", 500 * time.Millisecond, 150, 0},
		{"first window: 20 in 1 s", time.Second, 120, 20},
		{"second window not over: the first's rate", 1500 * time.Millisecond, 500, 20},
		{"second window: 80 in 2 s", 3 * time.Second, 200, 40},
		{"idle window", 4 * time.Second, 200, 0},
		{"counter went back: restart, last rate kept", 5 * time.Second, 10, 0},
		{"window after the restart: 30 in 1.5 s", 6500 * time.Millisecond, 40, 20},
	}
	for _, st := range steps {
		admitted = st.count
		r.Update(slots(1, t0.Add(st.after)))
		if got := r.Report().GetRpsFractional(); got != st.wantRPS {
			t.Errorf("%s: rps_fractional = %v, want %v", st.name, got, st.wantRPS)
		}
		if got := r.ServerMetrics().QPS; got != st.wantRPS {
			t.Errorf("%s: ServerMetrics().QPS = %v, want %v", st.name, got, st.wantRPS)
		}
		if got := r.QPS(); got != st.wantRPS {
			t.Errorf("%s: QPS() = %v, want %v", st.name, got, st.wantRPS)
		}
	}
}

func TestReporterReport(t *testing.T) {
	var admitted uint64
	r := orcagrpc.NewReporter(orcagrpc.Options{Admitted: func() uint64 { return admitted }})
	r.Update(slots(0, t0))
	admitted = 10
	r.Update(slots(3, t0.Add(2*time.Second)))
	want := &v3orcapb.OrcaLoadReport{
		ApplicationUtilization: 0.75,
		RpsFractional:          5,
		NamedMetrics: map[string]float64{
			"active_prefill_tokens": 0, "in_flight": 3, "queued": 0, "prefilling": 0, "busy": 0,
		},
	}
	got := r.Report()
	if !proto.Equal(got, want) {
		t.Errorf("Report = %v, want %v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the report breaks the proto's rules: %v", err)
	}
}

// TestReporterTrailer: the trailer is the report, serialized under
// endpoint-load-metrics-bin, in a new MD at each call.
func TestReporterTrailer(t *testing.T) {
	r := orcagrpc.NewReporter(orcagrpc.Options{})
	r.Update(slots(2, t0))
	md := r.Trailer()
	if len(md) != 1 || len(md[orcagrpc.TrailerKey]) != 1 {
		t.Fatalf("Trailer = %v, want one %s value", md, orcagrpc.TrailerKey)
	}
	var got v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(md[orcagrpc.TrailerKey][0]), &got); err != nil {
		t.Fatalf("the trailer does not parse: %v", err)
	}
	if !proto.Equal(&got, r.Report()) {
		t.Errorf("the trailer holds %v, want the report %v", &got, r.Report())
	}
	md.Set(orcagrpc.TrailerKey, "changed by the caller")
	if again := r.Trailer(); again[orcagrpc.TrailerKey][0] == "changed by the caller" {
		t.Error("a caller's change to its MD reached the next Trailer")
	}
}

// TestServerMetricsIsACopy: grpc-go's per-call interceptor merges into
// the maps it gets; the Reporter's own must not change.
func TestServerMetricsIsACopy(t *testing.T) {
	r := orcagrpc.NewReporter(orcagrpc.Options{})
	r.Update(slots(2, t0))
	sm := r.ServerMetrics()
	sm.NamedMetrics[orcagrpc.MetricInFlight] = 99
	sm.Utilization["x"] = 1
	sm.AppUtilization = 0.9
	if again := r.ServerMetrics(); again.NamedMetrics[orcagrpc.MetricInFlight] != 2 || len(again.Utilization) != 0 ||
		again.AppUtilization != 0.5 {
		t.Errorf("ServerMetrics after the caller changed its copy = %+v", again)
	}
	if r.Report().GetNamedMetrics()[orcagrpc.MetricInFlight] != 2 {
		t.Error("a change to ServerMetrics' copy reached the report")
	}
}

// TestReporterConcurrent: readers on several goroutines while snapshots
// are published; the race detector checks it.
func TestReporterConcurrent(t *testing.T) {
	var admitted atomic.Uint64
	r := orcagrpc.NewReporter(orcagrpc.Options{Admitted: admitted.Load})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if u := r.Report().GetApplicationUtilization(); u < 0 || u > 1 {
					t.Errorf("application_utilization %v", u)
				}
				_ = r.Trailer()
				r.ServerMetrics().NamedMetrics["mine"] = 1
				_, _ = proto.Marshal(r.Report())
			}
		})
	}
	for i := range 1000 {
		admitted.Add(3)
		r.Update(slots(i%5, t0.Add(time.Duration(i)*10*time.Millisecond)))
	}
	close(stop)
	wg.Wait()
	if got := r.Report().GetRpsFractional(); got != 300 {
		t.Errorf("rps_fractional = %v, want 300 (3 every 10 ms)", got)
	}
}
