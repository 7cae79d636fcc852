package grpcproxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/limiter"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// server, connection and call is ended in t.Cleanup, and a call's pump
// ends with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bound is how long any wait in these tests may last before it is a
// failure. It bounds waits; no assertion depends on elapsed time.
const bound = 10 * time.Second

// The metadata keys that tell the test engine what to do with a call.
const (
	// keyHold names the gates (engine.gates) a call waits at: "start",
	// before anything is sent; "first", after its first message.
	keyHold = "x-test-hold"
	// keyFail makes the engine fail the call with this code before its
	// first message.
	keyFail = "x-test-fail"
	// keyHeaderFirst makes the engine send its header before it fails.
	keyHeaderFirst = "x-test-header-first"
)

// The engine's failure, as the tests expect it back.
const engineFailMessage = "engine says no"

// engine is a real gRPC server of grpc-go's test service: the "engine"
// behind the proxy. What it does with a call is told by the call's
// metadata (keyHold, keyFail, keyHeaderFirst); it counts its calls and
// the most in flight at once, reports each call's metadata and deadline
// as it arrives (arrived) and the context error of each held call whose
// context ended (left).
type engine struct {
	testgrpc.UnimplementedTestServiceServer

	gates map[string]chan struct{} // closed by release
	once  map[string]*sync.Once

	calls, inFlight, maxInFlight atomic.Int64
	arrived                      chan arrival
	left                         chan error
}

// arrival is a call as the engine saw it arrive.
type arrival struct {
	md          metadata.MD
	deadline    time.Time
	hasDeadline bool
}

func newEngine() *engine {
	e := &engine{gates: map[string]chan struct{}{}, once: map[string]*sync.Once{},
		arrived: make(chan arrival, 128), left: make(chan error, 128)}
	for _, g := range []string{"start", "first"} {
		e.gates[g], e.once[g] = make(chan struct{}), new(sync.Once)
	}
	return e
}

// release opens a gate: the calls held there, and those to come, go on.
func (e *engine) release(gate string) { e.once[gate].Do(func() { close(e.gates[gate]) }) }

func (e *engine) releaseAll() {
	for g := range e.gates {
		e.release(g)
	}
}

// begin starts a call: it counts it, reports it, sets the engine's header
// and trailer metadata, holds it at the "start" gate if asked, and fails
// it if asked. done ends the count.
func (e *engine) begin(ctx context.Context) (done func(), err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	e.calls.Add(1)
	n := e.inFlight.Add(1)
	for m := e.maxInFlight.Load(); n > m && !e.maxInFlight.CompareAndSwap(m, n); m = e.maxInFlight.Load() {
	}
	done = func() { e.inFlight.Add(-1) }
	dl, ok := ctx.Deadline()
	select {
	case e.arrived <- arrival{md: md, deadline: dl, hasDeadline: ok}:
	default:
	}
	echo := metadata.Pairs("x-engine-header", "h")
	for _, v := range md["x-custom"] {
		echo.Append("x-echo-custom", v)
	}
	_ = grpc.SetHeader(ctx, echo)
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-engine-trailer", "t", "x-engine-trailer-bin", "\x00\x01"))
	if err := e.hold(ctx, md, "start"); err != nil {
		return done, err
	}
	if len(md[keyHeaderFirst]) > 0 {
		_ = grpc.SendHeader(ctx, nil)
	}
	if v := md[keyFail]; len(v) > 0 {
		code, _ := strconv.Atoi(v[0])
		st, err := status.New(codes.Code(code), engineFailMessage).
			WithDetails(protoadapt.MessageV1Of(&testgrpc.Payload{Body: []byte("detail")}))
		if err != nil {
			return done, err
		}
		return done, st.Err()
	}
	return done, nil
}

// hold waits at gate g if the call asks for it, until the gate opens or
// the call's context ends (then reported in left).
func (e *engine) hold(ctx context.Context, md metadata.MD, g string) error {
	for _, v := range md[keyHold] {
		if v != g {
			continue
		}
		select {
		case <-e.gates[g]:
		case <-ctx.Done():
			select {
			case e.left <- ctx.Err():
			default:
			}
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

func (e *engine) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	done, err := e.begin(ctx)
	defer done()
	if err != nil {
		return nil, err
	}
	return &testgrpc.Empty{}, nil
}

// UnaryCall echoes the request's payload, or answers ResponseSize bytes
// when it is set.
func (e *engine) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	done, err := e.begin(ctx)
	defer done()
	if err != nil {
		return nil, err
	}
	body := req.GetPayload().GetBody()
	if req.GetResponseSize() > 0 {
		body = make([]byte, req.GetResponseSize())
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: body}}, nil
}

// StreamingOutputCall sends one message per ResponseParameters: the
// request's payload followed by Size bytes of the message's letter.
func (e *engine) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, s testgrpc.TestService_StreamingOutputCallServer) error {
	ctx := s.Context()
	done, err := e.begin(ctx)
	defer done()
	if err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for i, p := range req.GetResponseParameters() {
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: outputBody(req.GetPayload().GetBody(), i, p.GetSize())}}); err != nil {
			return err
		}
		if i == 0 {
			if err := e.hold(ctx, md, "first"); err != nil {
				return err
			}
		}
	}
	return nil
}

// outputBody is the body of StreamingOutputCall's message i.
func outputBody(in []byte, i int, size int32) []byte {
	b := append([]byte(nil), in...)
	for range size {
		b = append(b, byte('a'+i%26))
	}
	return b
}

// StreamingInputCall answers the number of bytes received, with their
// SHA-256 as trailer metadata.
func (e *engine) StreamingInputCall(s testgrpc.TestService_StreamingInputCallServer) error {
	done, err := e.begin(s.Context())
	defer done()
	if err != nil {
		return err
	}
	h, n := sha256.New(), 0
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			s.SetTrailer(metadata.Pairs("x-body-sha256", hex.EncodeToString(h.Sum(nil))))
			return s.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
		}
		if err != nil {
			return err
		}
		h.Write(req.GetPayload().GetBody())
		n += len(req.GetPayload().GetBody())
	}
}

// FullDuplexCall echoes each message's payload as it arrives.
func (e *engine) FullDuplexCall(s testgrpc.TestService_FullDuplexCallServer) error {
	done, err := e.begin(s.Context())
	defer done()
	if err != nil {
		return err
	}
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// observed records what the gate reports.
type observed struct {
	mu   sync.Mutex
	done []string // outcomes, in order
}

// RequestDone records the outcome; one reported with any protocol but
// gRPC is recorded with it, so that no test's expected outcomes match.
func (o *observed) RequestDone(outcome, _, protocol string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if protocol != string(gate.ProtocolGRPC) {
		outcome += " (protocol " + strconv.Quote(protocol) + ")"
	}
	o.done = append(o.done, outcome)
}

func (o *observed) QueueWait(string, float64) {}
func (o *observed) FirstByte(float64)         {}
func (o *observed) Received()                 {}
func (o *observed) Decided(string)            {}

func (o *observed) outcomes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.done...)
}

// count returns how many calls ended with each outcome.
func (o *observed) count() map[string]int {
	m := map[string]int{}
	for _, v := range o.outcomes() {
		m[v]++
	}
	return m
}

// config sets up a harness.
type config struct {
	lim      limiter.Options
	limiters *gate.Limiters // instead of lim
	policy   *gate.Policy
	maxMsg   int
	retry    time.Duration
	trailer  func() metadata.MD
	// engineAddr, when set, is the engine the proxy dials instead of a
	// test engine.
	engineAddr string
	// serveHTTP serves the proxy through grpc.Server.ServeHTTP on an
	// HTTP/2 (h2c) net/http server, as slotgate's port does when it
	// dispatches by content-type, instead of grpc.Server.Serve.
	serveHTTP bool
	// register adds services of the proxy's server's own.
	register func(*grpc.Server)
}

// harness is a test engine, the proxy in front of it on its own gRPC
// server, and a typed client of each: the proxy never sees the types.
type harness struct {
	eng    *engine
	gate   *gate.Gate
	obs    *observed
	client testgrpc.TestServiceClient // through the proxy
	direct testgrpc.TestServiceClient // to the engine itself
	conn   *grpc.ClientConn           // the client's connection to the proxy
}

func newHarness(t *testing.T, cfg config) *harness {
	t.Helper()
	h := &harness{obs: &observed{}}
	addr := cfg.engineAddr
	if addr == "" {
		h.eng = newEngine()
		srv := grpc.NewServer()
		testgrpc.RegisterTestServiceServer(srv, h.eng)
		addr = serve(t, srv)
		h.direct = testgrpc.NewTestServiceClient(dial(t, addr))
	}
	engineConn := dial(t, addr)
	gopts := gate.Options{Limiters: cfg.limiters, Policy: cfg.policy, Observer: h.obs}
	if cfg.limiters == nil {
		lim, err := limiter.New(cfg.lim)
		if err != nil {
			t.Fatal(err)
		}
		gopts.Limiter = lim
	}
	g, err := gate.New(gopts)
	if err != nil {
		t.Fatal(err)
	}
	h.gate = g
	p, err := grpcproxy.New(grpcproxy.Options{Gate: g, Engine: engineConn, MaxMessageBytes: cfg.maxMsg, RetryAfter: cfg.retry,
		Trailer: cfg.trailer})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(p.ServerOptions()...)
	if cfg.register != nil {
		cfg.register(srv)
	}
	var proxyAddr string
	if cfg.serveHTTP {
		proxyAddr = serveHTTP(t, srv)
	} else {
		proxyAddr = serve(t, srv)
	}
	h.conn = dial(t, proxyAddr)
	h.client = testgrpc.NewTestServiceClient(h.conn)
	if h.eng != nil {
		t.Cleanup(h.eng.releaseAll) // first: held calls end before the servers stop
	}
	return h
}

// serve serves srv on a new 127.0.0.1 listener until the test ends.
func serve(t *testing.T, srv *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return lis.Addr().String()
}

// serveHTTP serves srv through its ServeHTTP on an unencrypted HTTP/2
// net/http server until the test ends.
func serveHTTP(t *testing.T, srv *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: bound, Protocols: new(http.Protocols)}
	hs.Protocols.SetUnencryptedHTTP2(true)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(lis) }()
	t.Cleanup(func() {
		_ = hs.Close()
		<-served
		srv.Stop()
	})
	return lis.Addr().String()
}

// dial returns a connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// testContext is a context bounded by bound, ended with the test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits, bounded, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: bound, Every: time.Millisecond}.True(t, what, cond)
}

// arrival waits for the engine's next call.
func (h *harness) arrival(t *testing.T) arrival {
	t.Helper()
	select {
	case a := <-h.eng.arrived:
		return a
	case <-time.After(bound):
		t.Fatal("timed out waiting for a call at the engine")
		return arrival{}
	}
}

// left waits for a held call's context to end at the engine.
func (h *harness) left(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.eng.left:
		return err
	case <-time.After(bound):
		t.Fatal("timed out waiting for a held call to end at the engine")
		return nil
	}
}

// idle waits until the gate holds no slot and queues no call.
func (h *harness) idle(t *testing.T) {
	t.Helper()
	eventually(t, "the gate is idle", func() bool {
		s := h.gate.Stats()
		return s.Holding == 0 && s.Waiting == 0 && s.Prefilling == 0
	})
}

// wantStatus checks err's code and message.
func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || (msg != "" && st.Message() != msg) {
		t.Fatalf("status = %v %q, want %v %q", st.Code(), st.Message(), code, msg)
	}
}

// wantMD checks that md has key with exactly the values want.
func wantMD(t *testing.T, what string, md metadata.MD, key string, want ...string) {
	t.Helper()
	got := md[key]
	if len(got) != len(want) {
		t.Fatalf("%s %s = %q, want %q (all: %v)", what, key, got, want, md)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s %s = %q, want %q (all: %v)", what, key, got, want, md)
		}
	}
}
