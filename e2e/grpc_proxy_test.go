package e2e_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// grpcEngine is a real gRPC server on 127.0.0.1 standing in for an engine
// reached over gRPC (grpc-go's own test service, which slotgate never
// compiles in): it counts calls in flight and holds them until released.
type grpcEngine struct {
	testgrpc.UnimplementedTestServiceServer
	addr string

	inFlight, maxInFlight, calls atomic.Int64
	mu                           sync.Mutex
	gate                         chan struct{}
}

// newGRPCEngine starts the engine; register adds services of its own
// (server reflection, say).
func newGRPCEngine(t *testing.T, register ...func(*grpc.Server)) *grpcEngine {
	t.Helper()
	e := &grpcEngine{gate: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, e)
	for _, r := range register {
		r(srv)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { e.release(); srv.Stop() })
	e.addr = ln.Addr().String()
	return e
}

func (e *grpcEngine) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.gate:
	default:
		close(e.gate)
	}
}

// StreamingOutputCall answers one message per response parameter, after
// the engine is released, echoing the caller's x-request-id in its header.
func (e *grpcEngine) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, s testgrpc.TestService_StreamingOutputCallServer) error {
	e.calls.Add(1)
	n := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for {
		m := e.maxInFlight.Load()
		if n <= m || e.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	md, _ := metadata.FromIncomingContext(s.Context())
	if err := s.SendHeader(metadata.Pairs("echo-request-id", first(md["x-request-id"]))); err != nil {
		return err
	}
	select {
	case <-e.gate:
	case <-s.Context().Done():
		return s.Context().Err()
	}
	for range req.GetResponseParameters() {
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// streamCall runs one server-streaming call of two messages and returns
// its status.
func streamCall(ctx context.Context, c testgrpc.TestServiceClient) error {
	stream, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		Payload:            &testgrpc.Payload{Body: []byte("prompt")},
		ResponseParameters: []*testgrpc.ResponseParameters{{}, {}},
	})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestGRPCCap: N=3, Q=2 and 40 concurrent streaming calls on the proxy
// port: exactly 5 are served (3 at once, 2 from the queue), 35 are refused
// at once with RESOURCE_EXHAUSTED and Dynamo's message, and the engine
// never has more than 3.
func TestGRPCCap(t *testing.T) {
	t.Parallel()
	http1 := newEngine(t) // the HTTP engine, for readiness
	eng := newGRPCEngine(t)
	sg := start(t, http1.url(), nil, "--engine-grpc-url", "http://"+eng.addr,
		"--engine-request-limit", "3", "--request-queue-limit", "2")
	client := testgrpc.NewTestServiceClient(dialGRPC(t, sg.proxy[len("http://"):]))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	const calls = 40
	errs := make(chan error, calls)
	for range calls {
		go func() { errs <- streamCall(ctx, client) }()
	}
	refused := 0
	for refused < calls-5 {
		err := <-errs
		st := status.Convert(err)
		if st.Code() != codes.ResourceExhausted || st.Message() != "Server overloaded: worker at capacity" {
			t.Fatalf("a call ended %v before the engine was released, want RESOURCE_EXHAUSTED at capacity", err)
		}
		refused++
	}
	eventually(t, "3 calls at the engine and 2 queued", func() bool {
		return eng.inFlight.Load() == 3 && sg.metric("dynamo_request_queue") == 2
	})
	eng.release()
	for range 5 {
		if err := <-errs; err != nil {
			t.Errorf("an admitted call: %v", err)
		}
	}
	if got := eng.maxInFlight.Load(); got != 3 {
		t.Errorf("the engine had at most %d calls at once, want 3", got)
	}
	for outcome, want := range map[string]float64{"admitted_direct": 3, "admitted_queued": 2, "rejected_capacity": 35} {
		if got := sg.metric("slotgate_requests_total", "outcome", outcome); got != want {
			t.Errorf("slotgate_requests_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != 35 {
		t.Errorf("dynamo_rejection_request_total = %v, want 35", got)
	}
}

// TestGRPCAndHTTPShareSlots: one limiter for both protocols. With N=2 and
// no queue, an HTTP request and a gRPC call hold both slots, and the next
// of either protocol is refused.
func TestGRPCAndHTTPShareSlots(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t)
	httpEng.hold()
	eng := newGRPCEngine(t)
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr,
		"--engine-request-limit", "2", "--request-queue-limit", "0")
	client := testgrpc.NewTestServiceClient(dialGRPC(t, sg.proxy[len("http://"):]))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	httpDone := make(chan result, 1)
	go func() { httpDone <- post(ctx, http.DefaultClient, sg.proxy, "http-holder", "{}") }()
	httpEng.waitInFlight(t, 1)
	grpcDone := make(chan error, 1)
	go func() { grpcDone <- streamCall(ctx, client) }()
	eventually(t, "the gRPC call at the engine", func() bool { return eng.inFlight.Load() == 1 })

	if r := post(ctx, http.DefaultClient, sg.proxy, "http-refused", "{}"); r.status != 529 {
		t.Errorf("HTTP with both slots held: %d, want 529", r.status)
	}
	if err := streamCall(ctx, client); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("gRPC with both slots held: %v, want RESOURCE_EXHAUSTED", err)
	}
	httpEng.release()
	eng.release()
	if r := <-httpDone; r.status != http.StatusOK {
		t.Errorf("HTTP holder: %d", r.status)
	}
	if err := <-grpcDone; err != nil {
		t.Errorf("gRPC holder: %v", err)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_capacity"); got != 2 {
		t.Errorf("rejected_capacity = %v, want one of each protocol", got)
	}
}

// TestGRPCPortAndHealth: --grpc-listen takes calls too; grpc.health.v1 is
// slotgate's own answer, from readiness, and turns NOT_SERVING when
// draining; without --engine-grpc-url a call is UNIMPLEMENTED, saying why.
func TestGRPCPortAndHealth(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := ln.Addr().String()
	ln.Close()
	sg := start(t, httpEng.url(), nil, "--grpc-listen", grpcAddr, "--drain-delay", "1h")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, addr := range []string{grpcAddr, sg.proxy[len("http://"):]} {
		conn := dialGRPC(t, addr)
		health := healthpb.NewHealthClient(conn)
		eventually(t, "SERVING on "+addr, func() bool {
			h, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
			return err == nil && h.GetStatus() == healthpb.HealthCheckResponse_SERVING
		})
		err := streamCall(ctx, testgrpc.NewTestServiceClient(conn))
		if st := status.Convert(err); st.Code() != codes.Unimplemented || st.Message() == "" ||
			!strings.Contains(st.Message(), "--engine-grpc-url") {
			t.Errorf("a call without a gRPC engine on %s: %v, want UNIMPLEMENTED naming --engine-grpc-url", addr, err)
		}
	}
	if code, _ := postJSON(t, sg.admin+"/drain", ""); code != http.StatusAccepted {
		t.Fatalf("POST /drain: %d", code)
	}
	health := healthpb.NewHealthClient(dialGRPC(t, grpcAddr))
	eventually(t, "NOT_SERVING once draining", func() bool {
		h, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && h.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
	})
}

// TestGRPCCallORCATrailer: with --orca-header, a forwarded call's trailers
// carry slotgate's load report, the serialized OrcaLoadReport that
// grpc-go's weighted round robin reads per call.
func TestGRPCCallORCATrailer(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t)
	eng := newGRPCEngine(t)
	eng.release()
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr,
		"--engine-request-limit", "4", "--orca-header")
	client := testgrpc.NewTestServiceClient(dialGRPC(t, sg.proxy[len("http://"):]))
	trailer := streamOnce(t, client)
	bin := trailer["endpoint-load-metrics-bin"]
	if len(bin) != 1 {
		t.Fatalf("trailers %v, want one endpoint-load-metrics-bin", trailer)
	}
	var report v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(bin[0]), &report); err != nil {
		t.Fatalf("the report does not decode: %v", err)
	}
	// The latest published snapshot: the call may or may not be in it yet.
	if u := report.GetApplicationUtilization(); u < 0 || u > 1 {
		t.Errorf("application_utilization = %v, want within [0, 1]", u)
	}
	if _, ok := report.GetNamedMetrics()["in_flight"]; !ok {
		t.Errorf("named metrics %v, want in_flight", report.GetNamedMetrics())
	}
}

// TestGRPCHealthWatchEndsAtDrain: a grpc.health.v1 Watch stream (what
// grpc-go's client-side health checking holds open) turns NOT_SERVING when
// the drain begins and then ends, so that it holds up neither the proxy
// port's shutdown nor the gRPC port's: SIGTERM exits 0 long before the
// shutdown timeout.
func TestGRPCHealthWatchEndsAtDrain(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := ln.Addr().String()
	ln.Close()
	sg := start(t, httpEng.url(), nil, "--grpc-listen", grpcAddr, "--drain-delay", "0s", "--shutdown-timeout", "1h")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var watches []healthpb.Health_WatchClient
	for _, addr := range []string{grpcAddr, sg.proxy[len("http://"):]} {
		w, err := healthpb.NewHealthClient(dialGRPC(t, addr)).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		eventuallyServing(t, w)
		watches = append(watches, w)
	}
	sg.signal(syscall.SIGTERM)
	for i, w := range watches {
		var last healthpb.HealthCheckResponse_ServingStatus
		for {
			msg, err := w.Recv()
			if err != nil {
				if status.Code(err) != codes.Unavailable || last != healthpb.HealthCheckResponse_NOT_SERVING {
					t.Errorf("watch %d ended %v after %v, want UNAVAILABLE after NOT_SERVING", i, err, last)
				}
				break
			}
			last = msg.GetStatus()
		}
	}
	if code := sg.wait(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}

// eventuallyServing reads a Watch stream until it says SERVING.
func eventuallyServing(t *testing.T, w healthpb.Health_WatchClient) {
	t.Helper()
	for {
		msg, err := w.Recv()
		if err != nil {
			t.Fatalf("health watch: %v", err)
		}
		if msg.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}
