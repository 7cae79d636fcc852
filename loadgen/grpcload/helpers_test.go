package grpcload_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/loadgen/grpcload"
	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
	"github.com/slotgate/slotgate/sim"
)

// waitLimit bounds every run, so that a broken sender fails a test instead
// of hanging it. Nothing here measures time against it.
const waitLimit = 30 * time.Second

// checkLeaks registers a goroutine leak check; call it first, so that it
// runs after every other cleanup (servers stopped, senders closed).
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// serve serves register's services on a 127.0.0.1 listener until the test
// ends, and returns the URL a Sender takes.
func serve(t *testing.T, register func(grpc.ServiceRegistrar)) string {
	t.Helper()
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	register(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// startSim serves enginesim's gRPC service in front of an engine with
// opts; run says whether the engine's loops run (without them, requests
// wait in its queue until they leave). The engine stops at cleanup, after
// the server.
func startSim(t *testing.T, opts sim.Options, run bool) (string, *sim.Engine) {
	t.Helper()
	e, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := e.Run(ctx); err != nil {
				t.Errorf("engine Run: %v", err)
			}
		})
		t.Cleanup(func() { cancel(); wg.Wait() })
	}
	svc, err := sim.NewGRPCService(sim.GRPCOptions{Engine: e})
	if err != nil {
		t.Fatalf("NewGRPCService: %v", err)
	}
	return serve(t, svc.Register), e
}

// newSender returns a Sender for url, closed at cleanup.
func newSender(t *testing.T, url string) *grpcload.Sender {
	t.Helper()
	s, err := grpcload.New(grpcload.Options{URL: url})
	if err != nil {
		t.Fatalf("New(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// recording is a Sender that records the requests it passes on.
type recording struct {
	*grpcload.Sender

	mu   sync.Mutex
	reqs []loadgen.Request
}

func (r *recording) Send(ctx context.Context, req loadgen.Request) loadgen.Answer {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Sender.Send(ctx, req)
}

func (r *recording) requests() []loadgen.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// options returns a closed loop of requests through s: 2 workers, prompts
// of 10 words, 6 output tokens, streamed.
func options(s loadgen.Sender, requests int64) loadgen.Options {
	return loadgen.Options{
		Mode:         loadgen.Closed,
		Concurrency:  2,
		Requests:     requests,
		DrainTimeout: waitLimit,
		Sender:       s,
		Stream:       true,
		PromptTokens: loadgen.FixedDist(10),
		MaxTokens:    loadgen.FixedDist(6),
		Timeout:      waitLimit,
		Seed:         1,
	}
}

// runLoad runs a generator with opts and checks the invariants every
// report keeps: sent is the sum of by_status and of the requests asked
// for, and the latency samples come from successful requests only.
func runLoad(t *testing.T, opts loadgen.Options) loadgen.Report {
	t.Helper()
	g, err := loadgen.New(opts)
	if err != nil {
		t.Fatalf("loadgen.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	r := g.Run(ctx)
	var sum int64
	for _, n := range r.ByStatus {
		sum += n
	}
	if sum != r.Sent || r.Sent != opts.Requests {
		t.Errorf("sent = %d, by_status %v sums to %d; want %d", r.Sent, r.ByStatus, sum, opts.Requests)
	}
	if r.E2E.Count != int(r.OK) || r.TTFT.Count > int(r.OK) {
		t.Errorf("e2e count = %d, ttft count = %d, want ok = %d", r.E2E.Count, r.TTFT.Count, r.OK)
	}
	return r
}

// fakeEngine is a VllmEngine whose Generate is a test's function, and
// which records the requests it gets.
type fakeEngine struct {
	enginepb.UnimplementedVllmEngineServer
	generate func(*enginepb.GenerateRequest, grpc.ServerStreamingServer[enginepb.GenerateResponse]) error

	mu   sync.Mutex
	reqs []*enginepb.GenerateRequest
}

func (f *fakeEngine) Generate(req *enginepb.GenerateRequest, stream grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.generate(req, stream)
}

func (f *fakeEngine) requests() []*enginepb.GenerateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// start serves f until the test ends.
func (f *fakeEngine) start(t *testing.T) string {
	t.Helper()
	return serve(t, func(s grpc.ServiceRegistrar) { enginepb.RegisterVllmEngineServer(s, f) })
}

func chunk(ids ...uint32) *enginepb.GenerateResponse {
	return &enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Chunk{Chunk: &enginepb.GenerateStreamChunk{
		TokenIds: ids, CompletionTokens: uint32(len(ids)),
	}}}
}

func complete(prompt, completion uint32, ids ...uint32) *enginepb.GenerateResponse {
	return &enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Complete{Complete: &enginepb.GenerateComplete{
		OutputIds: ids, FinishReason: "length", PromptTokens: prompt, CompletionTokens: completion,
	}}}
}
