package sim

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// grpcTestServer is a real gRPC server on 127.0.0.1 in front of an engine,
// and a client connected to it.
type grpcTestServer struct {
	engine *Engine
	svc    *GRPCService
	client enginepb.VllmEngineClient
	health healthgrpc.HealthClient
}

// startGRPC serves an engine with opts over gRPC; run says whether its
// loops run. Everything stops at cleanup: the client, then the server,
// which waits for its handlers (they end with their calls), then the
// engine.
func startGRPC(t *testing.T, opts Options, run bool) *grpcTestServer {
	t.Helper()
	e := newEngine(t, opts)
	if run {
		runEngine(t, e)
	}
	return serveGRPC(t, e)
}

// serveGRPC serves e over gRPC until the test ends.
func serveGRPC(t *testing.T, e *Engine) *grpcTestServer {
	t.Helper()
	return serveGRPCWith(t, GRPCOptions{Engine: e})
}

// serveGRPCWith serves opts.Engine over gRPC with opts until the test ends.
func serveGRPCWith(t *testing.T, opts GRPCOptions) *grpcTestServer {
	t.Helper()
	e := opts.Engine
	svc, err := NewGRPCService(opts)
	if err != nil {
		t.Fatalf("NewGRPCService: %v", err)
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	svc.Register(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &grpcTestServer{engine: e, svc: svc, client: enginepb.NewVllmEngineClient(conn), health: healthgrpc.NewHealthClient(conn)}
}

// recvAll reads a Generate stream to its end and returns its messages and
// the error that ended it, nil for a clean end.
func recvAll(stream grpc.ServerStreamingClient[enginepb.GenerateResponse]) ([]*enginepb.GenerateResponse, error) {
	var out []*enginepb.GenerateResponse
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// generateAll runs req to its end and fails the test on an error.
func (s *grpcTestServer) generateAll(t *testing.T, req *enginepb.GenerateRequest) []*enginepb.GenerateResponse {
	t.Helper()
	stream, err := s.client.Generate(t.Context(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	msgs, err := recvAll(stream)
	if err != nil {
		t.Fatalf("Generate stream: %v after %d messages", err, len(msgs))
	}
	return msgs
}

// checkCode fails the test unless err has code.
func checkCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("error %v, code %v; want %v", err, got, code)
	}
}

// genReq builds a GenerateRequest of prompt token ids.
func genReq(ids []uint32, maxTokens uint32, ignoreEOS, stream bool) *enginepb.GenerateRequest {
	return &enginepb.GenerateRequest{
		Input:          &enginepb.GenerateRequest_Tokenized{Tokenized: &enginepb.TokenizedInput{InputIds: ids}},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(maxTokens), IgnoreEos: ignoreEOS},
		Stream:         stream,
	}
}

// promptOf returns n token ids.
func promptOf(n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(firstTextToken + i)
	}
	return ids
}

// wantIDs is what enginesim generates for key: tokens output tokens.
func wantIDs(key uint64, tokens int) []uint32 {
	return tokenIDs(key, 0, tokens)
}

// streamed returns the tokens of the chunks, in order, and the complete
// message, checking that exactly one comes, last.
func streamed(t *testing.T, msgs []*enginepb.GenerateResponse) ([]uint32, *enginepb.GenerateComplete) {
	t.Helper()
	if len(msgs) == 0 || msgs[len(msgs)-1].GetComplete() == nil {
		t.Fatalf("the stream does not end with a complete message: %v", msgs)
	}
	var ids []uint32
	for i, m := range msgs[:len(msgs)-1] {
		c := m.GetChunk()
		if c == nil {
			t.Fatalf("message %d of %d is not a chunk: %v", i, len(msgs), m)
		}
		if len(c.GetTokenIds()) == 0 || int(c.GetCompletionTokens()) != len(c.GetTokenIds()) {
			t.Fatalf("chunk %d: %d token ids, completion_tokens %d", i, len(c.GetTokenIds()), c.GetCompletionTokens())
		}
		ids = append(ids, c.GetTokenIds()...)
	}
	return ids, msgs[len(msgs)-1].GetComplete()
}

// fakeStream is the server side of a Generate stream for calling the
// handler directly, inside a testing/synctest bubble: it records each
// message with the bubble's time.
type fakeStream struct {
	grpc.ServerStream // not set: only Context and Send are used
	ctx               context.Context

	mu    sync.Mutex
	msgs  []*enginepb.GenerateResponse
	times []time.Duration // since start
	start time.Time
}

func newFakeStream(ctx context.Context) *fakeStream {
	return &fakeStream{ctx: ctx, start: time.Now()}
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (f *fakeStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeStream) SetTrailer(metadata.MD)       {}

func (f *fakeStream) Send(m *enginepb.GenerateResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, m)
	f.times = append(f.times, time.Since(f.start))
	return nil
}

// sent returns the messages so far and when each came.
func (f *fakeStream) sent() ([]*enginepb.GenerateResponse, []time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs), slices.Clone(f.times)
}
