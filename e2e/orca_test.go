package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // registers weighted_round_robin
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// wrrConfig is a gRPC client's weighted round robin with out-of-band
// reports every 200 ms, weights used as soon as they come and updated
// every 100 ms (grpc-go's balancer/weightedroundrobin/config.go).
const wrrConfig = `{"loadBalancingConfig":[{"weighted_round_robin":{
	"enableOobLoadReport":true,"oobReportingPeriod":"0.2s","blackoutPeriod":"0s","weightUpdatePeriod":"0.1s"}}]}`

// countingEngine is a gRPC engine (grpc-go's test service) that answers
// UnaryCall at once, counting the calls, and holds StreamingOutputCall
// until its caller leaves.
type countingEngine struct {
	testgrpc.UnimplementedTestServiceServer
	addr  string
	calls atomic.Int64 // UnaryCalls answered
	held  atomic.Int64 // StreamingOutputCalls being held
}

func newCountingEngine(t *testing.T) *countingEngine {
	t.Helper()
	e := &countingEngine{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, e)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	e.addr = ln.Addr().String()
	return e
}

func (e *countingEngine) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	e.calls.Add(1)
	return &testgrpc.SimpleResponse{}, nil
}

func (e *countingEngine) StreamingOutputCall(_ *testgrpc.StreamingOutputCallRequest, s testgrpc.TestService_StreamingOutputCallServer) error {
	e.held.Add(1)
	defer e.held.Add(-1)
	<-s.Context().Done()
	return s.Context().Err()
}

// orcaBackend is a slotgate with a gRPC engine of its own, on its proxy
// port and on --grpc-listen.
type orcaBackend struct {
	sg        *sidecar
	engine    *countingEngine
	grpcAddr  string // --grpc-listen
	proxyAddr string // the proxy port, gRPC by h2c
}

func startORCABackend(t *testing.T, args ...string) *orcaBackend {
	t.Helper()
	eng := newCountingEngine(t)
	sg := start(t, newEngine(t).url(), nil, append([]string{"--engine-grpc-url", "http://" + eng.addr,
		"--grpc-listen", "127.0.0.1:0"}, args...)...)
	var line struct {
		GRPCProxy string `json:"grpc_proxy"`
	}
	if err := json.Unmarshal([]byte(sg.log.Lines(`"msg":"listening"`)[0]), &line); err != nil || line.GRPCProxy == "" {
		t.Fatalf("no grpc_proxy address in the listening line: %v", err)
	}
	return &orcaBackend{sg: sg, engine: eng, grpcAddr: line.GRPCProxy, proxyAddr: strings.TrimPrefix(sg.proxy, "http://")}
}

// openRCA opens an out-of-band load report stream on addr.
func openRCA(ctx context.Context, t *testing.T, addr string) v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsClient {
	t.Helper()
	stream, err := v3orcaservicegrpc.NewOpenRcaServiceClient(dialGRPC(t, addr)).StreamCoreMetrics(ctx,
		&v3orcaservicegrpc.OrcaLoadReportRequest{ReportInterval: durationpb.New(100 * time.Millisecond)})
	if err != nil {
		t.Fatalf("StreamCoreMetrics on %s: %v", addr, err)
	}
	return stream
}

// waitReport reads addr's reports until one satisfies ok, and returns it.
func waitReport(ctx context.Context, t *testing.T, addr string, ok func(*v3orcapb.OrcaLoadReport) bool) *v3orcapb.OrcaLoadReport {
	t.Helper()
	stream := openRCA(ctx, t, addr)
	for {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("load reports on %s ended before the one awaited: %v", addr, err)
		}
		if ok(r) {
			return r
		}
	}
}

// TestORCAWeightedRoundRobin: a grpc-go client balancing over three
// slotgates with weighted_round_robin, fed by their out-of-band ORCA
// reports, sends measurably less to the loaded one: 3 of its 4 slots are
// held, so it reports an application_utilization of at least 0.75, the
// others at most what the client's own calls take.
func TestORCAWeightedRoundRobin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	var backends [3]*orcaBackend
	for i := range backends {
		backends[i] = startORCABackend(t, "--engine-request-limit", "4", "--request-queue-limit", "16")
	}
	loaded := backends[0]
	holders := testgrpc.NewTestServiceClient(dialGRPC(t, loaded.grpcAddr))
	for range 3 {
		go func() { _ = streamCall(ctx, holders) }() // held until the test ends
	}
	eventually(t, "3 calls held by the loaded engine", func() bool { return loaded.engine.held.Load() == 3 })
	for _, addr := range []string{loaded.grpcAddr, loaded.proxyAddr} {
		waitReport(ctx, t, addr, func(r *v3orcapb.OrcaLoadReport) bool {
			return r.GetApplicationUtilization() == 0.75 && r.GetNamedMetrics()["in_flight"] == 3
		})
	}

	res := manual.NewBuilderWithScheme("slotgates")
	var eps []resolver.Endpoint
	for _, b := range backends {
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: b.grpcAddr}}})
	}
	res.InitialState(resolver.State{Endpoints: eps})
	conn, err := grpc.NewClient(res.Scheme()+":///slotgates", grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(wrrConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testgrpc.NewTestServiceClient(conn)

	// Until the weights take the reports in (rps_fractional needs a
	// second of calls), the client sends round robin; then each weight
	// follows the calls the backend got over its utilization, so the
	// loaded one's share shrinks with every rate window. Call in rounds
	// until one shows it under a quarter of each other's share, then
	// measure.
	deadline := time.Now().Add(waitLimit)
	first := sendRound(ctx, t, client, backends, 300)
	t.Logf("shares of the first 300 calls: %s", first)
	for counts := first; !counts.lighter(4); counts = sendRound(ctx, t, client, backends, 300) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s the loaded backend still gets %s", waitLimit, counts)
		}
	}
	counts := sendRound(ctx, t, client, backends, 900)
	t.Logf("shares of 900 calls, loaded backend first: %s", counts)
	if !counts.lighter(2) {
		t.Errorf("the loaded backend got %s, want under half of each other's share", counts)
	}
}

// shares are the calls each backend served, the loaded one first.
type shares [3]int64

// lighter reports whether the loaded backend got under 1/k of each
// other's calls.
func (s shares) lighter(k int64) bool { return s[1] > 0 && k*s[0] < s[1] && k*s[0] < s[2] }

func (s shares) String() string {
	total := s[0] + s[1] + s[2]
	if total == 0 {
		return "no calls"
	}
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(total))
	}
	return strings.Join(parts, ", ")
}

// sendRound sends n unary calls, one after the other, and returns how
// many each backend's engine answered. One at a time, a backend the client
// is not loading has one call in flight or none, so its reports read 1/N
// or 0 (which weighted round robin ignores), never a chance 2/N that
// would halve its weight.
func sendRound(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient, backends [3]*orcaBackend, n int) shares {
	t.Helper()
	var before shares
	for i, b := range backends {
		before[i] = b.engine.calls.Load()
	}
	for range n {
		if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	var got shares
	for i, b := range backends {
		got[i] = b.engine.calls.Load() - before[i]
	}
	return got
}

// TestORCAStreamsEndWhenDraining: a balancer holds its report stream as
// long as its connection. Draining ends those streams, on both gRPC
// ports, with UNAVAILABLE, so that slotgate exits at once after SIGTERM
// rather than at the end of a shutdown timeout of an hour.
func TestORCAStreamsEndWhenDraining(t *testing.T) {
	t.Parallel()
	b := startORCABackend(t, "--drain-delay", "0s", "--shutdown-timeout", "1h")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	streams := []v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsClient{openRCA(ctx, t, b.grpcAddr), openRCA(ctx, t, b.proxyAddr)}
	for _, s := range streams {
		if _, err := s.Recv(); err != nil {
			t.Fatalf("first report: %v", err)
		}
	}
	b.sg.signal(syscall.SIGTERM)
	for i, s := range streams {
		for {
			_, err := s.Recv()
			if err == nil {
				continue // a report sent before the drain
			}
			if status.Code(err) != codes.Unavailable {
				t.Errorf("stream %d once draining: %v, want UNAVAILABLE", i, err)
			}
			break
		}
	}
	if code := b.sg.wait(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}
