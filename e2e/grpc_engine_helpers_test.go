package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// grpcSim is one enginesim process serving HTTP and gRPC, which a test
// can kill and start again on the same gRPC port.
type grpcSim struct {
	enginesimProcess
	args     []string // the flags after --listen, --grpc-listen and --log-level
	httpURL  string   // "http://host:port" of its HTTP API, the current process's
	grpcAddr string   // host:port of its gRPC API, kept across restarts
}

// startGRPCSim runs enginesim with args, debug logs (one line per
// admitted request, with its request_id), and its HTTP and gRPC APIs on
// free ports, and returns once it listens.
func startGRPCSim(t *testing.T, args ...string) *grpcSim {
	t.Helper()
	e := &grpcSim{enginesimProcess: enginesimProcess{t: t}, args: args, grpcAddr: "127.0.0.1:0"}
	e.run()
	return e
}

func (e *grpcSim) run() {
	e.t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--grpc-listen", e.grpcAddr, "--log-level", "debug"}, e.args...)
	var line string
	e.enginesimProcess, line = runEnginesim(e.t, "gRPC "+e.grpcAddr, args...)
	var l struct {
		Addr     string `json:"addr"`
		GRPCAddr string `json:"grpc_addr"`
	}
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Addr == "" || l.GRPCAddr == "" {
		e.t.Fatalf("enginesim listening line %q: %v", line, err)
	}
	e.httpURL, e.grpcAddr = "http://"+l.Addr, l.GRPCAddr
}

// restart starts a new process on the same gRPC port.
func (e *grpcSim) restart() { e.t.Helper(); e.run() }

// metric reads one of the engine's series from its /metrics (vLLM's
// names and enginesim's own), summed over the series whose labels include
// labels; -1 when there is none.
func (e *grpcSim) metric(name string, labels ...string) float64 {
	e.t.Helper()
	resp, err := http.Get(e.httpURL + "/metrics")
	if err != nil {
		e.t.Fatalf("scrape enginesim: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse enginesim metrics: %v", err)
	}
	return metricValue(fams, name, labels...)
}

// admitted reports whether the engine admitted a Generate with request_id id.
func (e *grpcSim) admitted(id string) bool {
	return len(e.logs.Lines(`"request_id":"`+id+`"`)) > 0
}

// generation is what a client saw of one Generate call through slotgate.
type generation struct {
	id                      string
	start, firstToken, done time.Time
	chunks                  int
	complete                *enginepb.GenerateComplete
	err                     error
}

func (g generation) ttft() time.Duration { return g.firstToken.Sub(g.start).Round(time.Millisecond) }

// genRequest is a streaming Generate of promptTokens token ids and
// exactly maxTokens output tokens.
func genRequest(id string, promptTokens int, maxTokens uint32) *enginepb.GenerateRequest {
	ids := make([]uint32, promptTokens)
	for i := range ids {
		ids[i] = 1
	}
	return &enginepb.GenerateRequest{
		RequestId:      id,
		Input:          &enginepb.GenerateRequest_Tokenized{Tokenized: &enginepb.TokenizedInput{InputIds: ids}},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(maxTokens), IgnoreEos: true},
		Stream:         true,
	}
}

// generate runs req with its request_id as x-request-id too, and calls
// onFirst (when not nil) as the first token arrives.
func generate(ctx context.Context, c enginepb.VllmEngineClient, req *enginepb.GenerateRequest, onFirst func()) generation {
	g := generation{id: req.GetRequestId(), start: time.Now()}
	ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", g.id)
	stream, err := c.Generate(ctx, req)
	if err != nil {
		g.err = err
		return g
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				g.err = err
			}
			g.done = time.Now()
			return g
		}
		if chunk := msg.GetChunk(); chunk != nil && len(chunk.GetTokenIds()) > 0 {
			g.chunks++
			if g.firstToken.IsZero() {
				g.firstToken = time.Now()
				if onFirst != nil {
					onFirst()
				}
			}
		}
		if msg.GetComplete() != nil {
			g.complete = msg.GetComplete()
		}
	}
}

// grpcProxyClient is a VllmEngine client of slotgate's proxy port, once
// slotgate is ready.
func grpcProxyClient(t *testing.T, sg *sidecar) enginepb.VllmEngineClient {
	t.Helper()
	waitReady(t, sg)
	return enginepb.NewVllmEngineClient(dialGRPC(t, strings.TrimPrefix(sg.proxy, "http://")))
}

// echoEngine is a grpc-go TestService that shows what reached it: a
// streaming call's metadata comes back in its header and its trailers,
// and a unary call is held until its context ends, reporting the deadline
// it arrived with and how its context ended.
type echoEngine struct {
	testgrpc.UnimplementedTestServiceServer
	addr     string
	incoming chan metadata.MD // each streaming call's metadata
	held     chan heldCall    // each unary call's end
}

// heldCall is what the engine saw of a unary call it held.
type heldCall struct {
	hasDeadline bool
	remaining   time.Duration // of the deadline, as the call arrived
	ended       error         // its context's error once done
}

// echoPrefix marks the metadata the engine echoes.
const echoPrefix = "x-echo-"

func newEchoEngine(t *testing.T) *echoEngine {
	t.Helper()
	e := &echoEngine{incoming: make(chan metadata.MD, 4), held: make(chan heldCall, 4)}
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

// StreamingOutputCall sends the caller's x-echo-* metadata back as
// header-* in its header and trailer-* in its trailers, and one message
// per response parameter.
func (e *echoEngine) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, s testgrpc.TestService_StreamingOutputCallServer) error {
	md, _ := metadata.FromIncomingContext(s.Context())
	e.incoming <- md.Copy()
	header, trailer := metadata.MD{}, metadata.MD{}
	for k, v := range md {
		if name, ok := strings.CutPrefix(k, echoPrefix); ok {
			header["header-"+name], trailer["trailer-"+name] = v, v
		}
	}
	if err := s.SendHeader(header); err != nil {
		return err
	}
	for range req.GetResponseParameters() {
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
	s.SetTrailer(trailer)
	return nil
}

// UnaryCall holds the call until its context ends.
func (e *echoEngine) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	var h heldCall
	var dl time.Time
	if dl, h.hasDeadline = ctx.Deadline(); h.hasDeadline {
		h.remaining = time.Until(dl)
	}
	<-ctx.Done()
	h.ended = ctx.Err()
	e.held <- h
	return nil, status.FromContextError(ctx.Err()).Err()
}
