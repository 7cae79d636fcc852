package orcagrpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/slotgate/slotgate/load/orcagrpc"
)

// timeout bounds every wait for something that must happen; nothing here
// measures how fast.
const timeout = 30 * time.Second

// noLeaks checks, once the test and its cleanups are over, that every
// goroutine it started has ended. Call it first: the goroutines running
// then are the ones ignored.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// serve runs a gRPC server on 127.0.0.1 with register's services and
// returns a client connection to it; both end with the test.
func serve(t *testing.T, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	register(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// serveORCA serves rep's reports with a Service of opts.
func serveORCA(t *testing.T, rep *orcagrpc.Reporter, opts orcagrpc.ServiceOptions) v3orcaservicegrpc.OpenRcaServiceClient {
	t.Helper()
	svc, err := orcagrpc.NewService(rep, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v3orcaservicegrpc.NewOpenRcaServiceClient(serve(t, func(s *grpc.Server) { svc.Register(s) }))
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func every(d time.Duration) *v3orcaservicegrpc.OrcaLoadReportRequest {
	return &v3orcaservicegrpc.OrcaLoadReportRequest{ReportInterval: durationpb.New(d)}
}

// TestStreamCoreMetrics: the latest report at once, then each change
// within an interval or so; the stream ends when its client cancels.
func TestStreamCoreMetrics(t *testing.T) {
	noLeaks(t)
	rep := orcagrpc.NewReporter(orcagrpc.Options{})
	rep.Update(slots(1, t0))
	client := serveORCA(t, rep, orcagrpc.ServiceOptions{MinReportingInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	stream, err := client.StreamCoreMetrics(ctx, every(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(first, rep.Report()) || first.GetApplicationUtilization() != 0.25 {
		t.Errorf("first report = %v, want the latest, %v", first, rep.Report())
	}
	rep.Update(slots(3, t0.Add(time.Second)))
	for {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv before the change came: %v", err)
		}
		if r.GetApplicationUtilization() == 0.75 && r.GetNamedMetrics()[orcagrpc.MetricInFlight] == 3 {
			break
		}
	}
	cancel()
	for { // reports already received come first
		if _, err := stream.Recv(); err != nil {
			if status.Code(err) != codes.Canceled {
				t.Errorf("Recv after cancel: %v, want CANCELED", err)
			}
			break
		}
	}
}

// TestStreamCoreMetricsDraining: draining ends the open streams and
// refuses new ones, with UNAVAILABLE, so that a graceful stop need not
// wait for the balancers to hang up.
func TestStreamCoreMetricsDraining(t *testing.T) {
	noLeaks(t)
	rep := orcagrpc.NewReporter(orcagrpc.Options{})
	draining := make(chan struct{})
	client := serveORCA(t, rep, orcagrpc.ServiceOptions{Draining: draining})
	ctx := testContext(t)
	stream, err := client.StreamCoreMetrics(ctx, every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	close(draining)
	// Nothing but the end comes: the next report would be in an hour.
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("an open stream once draining: %v, want UNAVAILABLE", err)
	}
	late, err := client.StreamCoreMetrics(ctx, every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := late.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("a stream opened while draining: %v, %v; want UNAVAILABLE", r, err)
	}
}

func TestInterval(t *testing.T) {
	svc, err := orcagrpc.NewService(orcagrpc.NewReporter(orcagrpc.Options{}), orcagrpc.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := orcagrpc.NewService(orcagrpc.NewReporter(orcagrpc.Options{}), orcagrpc.ServiceOptions{MinReportingInterval: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		svc  *orcagrpc.Service
		req  *v3orcaservicegrpc.OrcaLoadReportRequest
		want time.Duration
	}{
		{"none asked: the heartbeat", svc, &v3orcaservicegrpc.OrcaLoadReportRequest{}, orcagrpc.ReportingInterval},
		{"nil request", svc, nil, orcagrpc.ReportingInterval},
		{"as asked", svc, every(200 * time.Millisecond), 200 * time.Millisecond},
		{"long, as asked", svc, every(time.Minute), time.Minute},
		{"too short: the minimum", svc, every(time.Millisecond), orcagrpc.MinReportingInterval},
		{"zero: the minimum", svc, every(0), orcagrpc.MinReportingInterval},
		{"negative: the minimum", svc, every(-time.Second), orcagrpc.MinReportingInterval},
		{"invalid: the heartbeat", svc, &v3orcaservicegrpc.OrcaLoadReportRequest{
			ReportInterval: &durationpb.Duration{Seconds: 1, Nanos: -1}}, orcagrpc.ReportingInterval},
		{"none asked, minimum above the heartbeat", slow, nil, 5 * time.Second},
		{"a minimum of its own", slow, every(time.Second), 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.svc.Interval(tc.req); got != tc.want {
				t.Errorf("Interval = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewServiceErrors(t *testing.T) {
	if _, err := orcagrpc.NewService(nil, orcagrpc.ServiceOptions{}); err == nil {
		t.Error("NewService(nil) succeeded")
	}
	rep := orcagrpc.NewReporter(orcagrpc.Options{})
	if _, err := orcagrpc.NewService(rep, orcagrpc.ServiceOptions{MinReportingInterval: -1}); err == nil {
		t.Error("NewService with a negative minimum succeeded")
	}
}

// TestSameReportsAsGRPCGo: a Reporter given to grpc-go's own ORCA
// machinery, as an orca.ServerMetricsProvider, yields the same report
// out of band (grpc-go's orca.Service sends one at once) and per call
// (orca.CallMetricsServerOption's trailer) as Service and Trailer.
func TestSameReportsAsGRPCGo(t *testing.T) {
	noLeaks(t)
	var admitted uint64
	rep := orcagrpc.NewReporter(orcagrpc.Options{Admitted: func() uint64 { return admitted }})
	rep.Update(slots(0, t0))
	admitted = 6
	s := slots(3, t0.Add(2*time.Second))
	s.Requests.Queued, s.Busy = 2, true
	rep.Update(s)
	ctx := testContext(t)

	mine, err := serveORCA(t, rep, orcagrpc.ServiceOptions{}).StreamCoreMetrics(ctx, every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	conn := serve(t, func(s *grpc.Server) {
		if err := orca.Register(s, orca.ServiceOptions{ServerMetricsProvider: rep}); err != nil {
			t.Fatal(err)
		}
		healthgrpc.RegisterHealthServer(s, callMetricsHealth{})
	}, orca.CallMetricsServerOption(rep))
	theirs, err := v3orcaservicegrpc.NewOpenRcaServiceClient(conn).StreamCoreMetrics(ctx, every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	a, errA := mine.Recv()
	b, errB := theirs.Recv()
	if errA != nil || errB != nil {
		t.Fatalf("Recv: %v, %v", errA, errB)
	}
	if !proto.Equal(a, b) || a.GetRpsFractional() != 3 || a.GetApplicationUtilization() != 0.75 {
		t.Errorf("out of band: Service sent %v, grpc-go's %v", a, b)
	}

	var trailer metadata.MD
	if _, err := healthgrpc.NewHealthClient(conn).Check(ctx, &healthgrpc.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	var fromGRPCGo, fromTrailer v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(trailer.Get(orcagrpc.TrailerKey)[0]), &fromGRPCGo); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal([]byte(rep.Trailer().Get(orcagrpc.TrailerKey)[0]), &fromTrailer); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&fromGRPCGo, &fromTrailer) || !proto.Equal(&fromTrailer, a) {
		t.Errorf("per call: grpc-go's trailer %v, Trailer %v", &fromGRPCGo, &fromTrailer)
	}
}

// callMetricsHealth asks for the call's metrics recorder, which makes
// grpc-go's interceptor send the trailer.
type callMetricsHealth struct {
	healthgrpc.UnimplementedHealthServer
}

func (callMetricsHealth) Check(ctx context.Context, _ *healthgrpc.HealthCheckRequest) (*healthgrpc.HealthCheckResponse, error) {
	orca.CallMetricsRecorderFromContext(ctx)
	return &healthgrpc.HealthCheckResponse{Status: healthgrpc.HealthCheckResponse_SERVING}, nil
}
