package e2e_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	_ "google.golang.org/grpc/orca" // registers the parser that gives balancers the per-call report
)

// orcaRecorderPolicy is a load balancing policy for the test: it picks
// any ready connection and hands the per-call load report that grpc-go
// parsed from each call's trailers (balancer.DoneInfo.ServerLoad), the
// view a weighted round robin balancer has, to perCallLoads.
const orcaRecorderPolicy = "slotgate_test_orca_recorder"

// perCallLoads receives what the policy's pickers saw at each call's end:
// the report, or nil when the call carried none. Test-only; registered
// policies are process-wide in grpc-go.
var perCallLoads = make(chan *v3orcapb.OrcaLoadReport, 16)

func init() {
	balancer.Register(base.NewBalancerBuilder(orcaRecorderPolicy, orcaPickerBuilder{}, base.Config{HealthCheck: false}))
}

type orcaPickerBuilder struct{}

func (orcaPickerBuilder) Build(info base.PickerBuildInfo) balancer.Picker {
	for sc := range info.ReadySCs {
		return orcaPicker{sc: sc}
	}
	return base.NewErrPicker(balancer.ErrNoSubConnAvailable)
}

type orcaPicker struct{ sc balancer.SubConn }

func (p orcaPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc, Done: func(di balancer.DoneInfo) {
		r, _ := di.ServerLoad.(*v3orcapb.OrcaLoadReport)
		select {
		case perCallLoads <- r:
		default:
		}
	}}, nil
}

// TestGRPCPerCallORCAReachesTheBalancer: a grpc-go client's balancer gets
// slotgate's per-call report from a forwarded call's trailers, parsed by
// grpc-go itself, with the named metrics and a positive rps_fractional
// once calls have been admitted; without --orca-header it gets none.
func TestGRPCPerCallORCAReachesTheBalancer(t *testing.T) {
	httpEng := newEngine(t)
	eng := newGRPCEngine(t)
	eng.release()
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{name: "with --orca-header", args: []string{"--orca-header"}, want: true},
		{name: "without", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sg := start(t, httpEng.url(), nil, append([]string{"--engine-grpc-url", "http://" + eng.addr,
				"--engine-request-limit", "4"}, tc.args...)...)
			conn, err := grpc.NewClient("passthrough:///"+sg.proxy[len("http://"):],
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+orcaRecorderPolicy+`":{}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			client := testgrpc.NewTestServiceClient(conn)
			var last *v3orcapb.OrcaLoadReport
			// rps_fractional is the admissions of the last second or so:
			// calls until a report shows some, or the wait ends.
			eventually(t, "a per-call report with rps_fractional", func() bool {
				streamOnce(t, client)
				select {
				case last = <-perCallLoads:
				case <-time.After(waitLimit):
					t.Fatal("the balancer saw no call end")
				}
				return !tc.want || last.GetRpsFractional() > 0
			})
			if !tc.want {
				if last != nil {
					t.Errorf("per-call report %v without --orca-header", last)
				}
				return
			}
			// The latest published snapshot: the call may or may not be in
			// it yet, so in_flight and the utilization may read 0.
			if _, ok := last.GetNamedMetrics()["in_flight"]; !ok {
				t.Errorf("per-call report %v, want slotgate's named metrics", last)
			}
		})
	}
}

// streamOnce makes one streaming call through client, reads it to its
// end and returns its trailers.
func streamOnce(t *testing.T, client testgrpc.TestServiceClient) metadata.MD {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	stream, err := client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return stream.Trailer()
		}
	}
}
