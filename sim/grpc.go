package sim

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// GRPCOptions configures NewGRPCService.
type GRPCOptions struct {
	// Engine runs the requests; required. Its Run is the caller's to call.
	// It may be the engine of an HTTP handler too: both then share its
	// scheduler, its KV pool and its counts.
	Engine *Engine
	// Seed is mixed into every request's generation key, as
	// ServerOptions.Seed: with the same seed, a prompt gets the same
	// output over gRPC and HTTP.
	Seed uint64
	// Faults injects faults into Generate calls; nil means none. Share the
	// HTTP handler's (ServerOptions.Faults) so that its admin call sets
	// both.
	Faults *Faults
	// Logger; nil means none.
	Logger *zap.Logger
}

// GRPCService is enginesim's gRPC API: vLLM's vllm.grpc.engine.VllmEngine
// (Generate, HealthCheck and Abort; protos/vllm/grpc/engine) and
// grpc.health.v1.Health, backed by the engine's scheduler as the HTTP API
// is.
//
// Generate submits the request as an HTTP completion does, so it queues,
// runs, is preempted and counts before its first token alike. A streaming
// call sends one chunk per Handle.Wait: the tokens sampled since the last
// one, normally one step's. The first chunk is sent only once the first
// token exists, so the first message of a stream is its first token. A
// complete message, with all the output tokens, the finish reason and the
// counts, ends every call whose request ends, by its length, a stop or an
// Abort; without stream it is the only message. A client that cancels
// aborts its request, and its blocks are freed, before the handler
// returns.
type GRPCService struct {
	engine   *Engine
	seed     uint64
	faults   *Faults
	log      *zap.Logger
	shutdown chan struct{} // closed by Shutdown
	once     sync.Once     // closes shutdown

	mu      sync.Mutex
	flights map[string]*Handle // requests in flight by request_id
}

// NewGRPCService returns the service for opts; it fails without an engine.
// It starts nothing: Register it on a grpc.Server.
func NewGRPCService(opts GRPCOptions) (*GRPCService, error) {
	if opts.Engine == nil {
		return nil, errors.New("sim: GRPCOptions.Engine is required")
	}
	g := &GRPCService{
		engine: opts.Engine, seed: opts.Seed, faults: opts.Faults, log: opts.Logger,
		shutdown: make(chan struct{}), flights: map[string]*Handle{},
	}
	if g.log == nil {
		g.log = zap.NewNop()
	}
	if g.faults == nil {
		g.faults, _ = NewFaults(DefaultFaultSet(), opts.Seed) // a valid set: no error
	}
	return g, nil
}

// Register registers vllm.grpc.engine.VllmEngine and grpc.health.v1.Health
// on s.
func (g *GRPCService) Register(s grpc.ServiceRegistrar) {
	enginepb.RegisterVllmEngineServer(s, engineServer{g: g})
	healthgrpc.RegisterHealthServer(s, healthServer{g: g})
}

// Shutdown makes health report NOT_SERVING and ends the health Watch
// streams, so that a grpc.Server's GracefulStop does not wait for them.
// Generate calls in flight carry on. It may be called more than once.
func (g *GRPCService) Shutdown() {
	g.once.Do(func() { close(g.shutdown) })
}

// serving reports whether the service is healthy: the engine runs and
// Shutdown was not called.
func (g *GRPCService) serving() bool {
	select {
	case <-g.shutdown:
		return false
	default:
		return !g.engine.Stopped()
	}
}

// engineServer implements VllmEngine's methods over the service.
type engineServer struct {
	enginepb.UnimplementedVllmEngineServer
	g *GRPCService
}

// Generate runs one request; see GRPCService. It fails with
// INVALID_ARGUMENT for a request the engine can never run or whose
// request_id is in flight already, RESOURCE_EXHAUSTED when the rank's
// queue is full (the HTTP API's 503), UNAVAILABLE when the engine stops,
// and CANCELED or DEADLINE_EXCEEDED when the client's context ends first.
// An injected error fails it with INTERNAL before the request is
// submitted, and an injected reset with UNAVAILABLE mid-stream; the call
// counts in flight from its start (inflight.go).
func (s engineServer) Generate(req *enginepb.GenerateRequest, stream grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
	g := s.g
	defer g.engine.trackInFlight(stream.Context())()
	in, err := g.input(req)
	if err != nil {
		return err
	}
	plan := g.faults.plan(in)
	if plan.fails() {
		return status.Error(codes.Internal, faultErrorMessage)
	}
	h, err := g.submit(req.GetRequestId(), in)
	if err != nil {
		if ce := g.log.Check(zap.DebugLevel, "request refused"); ce != nil {
			ce.Write(zap.String("rpc", "Generate"), zap.String("request_id", req.GetRequestId()), zap.Error(err))
		}
		return err
	}
	defer g.done(req.GetRequestId(), h)
	if ce := g.log.Check(zap.DebugLevel, "request admitted"); ce != nil {
		ce.Write(zap.String("rpc", "Generate"), zap.String("request_id", req.GetRequestId()), zap.Int("rank", h.Rank()),
			zap.Int("prompt_tokens", in.prompt), zap.Int("max_tokens", in.maxTokens), zap.Bool("stream", in.stream))
	}
	return g.answer(stream, h, in, plan)
}

// genStream is the server side of a Generate call.
type genStream = grpc.ServerStreamingServer[enginepb.GenerateResponse]

// answer streams the progress of h until it ends, with the request's fault
// at the HTTP API's points (stream.go): before the first chunk, after each
// chunk once half the expected output is out, and instead of the complete
// message.
func (g *GRPCService) answer(stream genStream, h *Handle, in genInput, plan *faultPlan) error {
	ctx := stream.Context()
	sent := 0
	for {
		p, err := h.Wait(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return grpcError(err, g.engine.Options())
		}
		if in.stream && p.Tokens > sent {
			if err := sendChunk(stream, in, plan, sent, p.Tokens); err != nil {
				return err
			}
			sent = p.Tokens
		}
		if p.Done {
			return complete(stream, in, plan, p)
		}
	}
}

// sendChunk sends the chunk of output tokens from through to-1 and applies
// the fault's hooks around it.
func sendChunk(stream genStream, in genInput, plan *faultPlan, from, to int) error {
	ctx := stream.Context()
	if from == 0 {
		if err := plan.first(ctx); err != nil {
			return status.FromContextError(err).Err()
		}
	}
	if err := stream.Send(chunkMessage(in, from, to)); err != nil {
		return err
	}
	reset, err := plan.streamed(ctx, to)
	switch {
	case err != nil:
		return status.FromContextError(err).Err()
	case reset:
		return status.Error(codes.Unavailable, faultResetMessage)
	}
	return nil
}

// complete sends the complete message that ends the call, unless the
// fault holds it back or ends the call with UNAVAILABLE instead.
func complete(stream genStream, in genInput, plan *faultPlan, p Progress) error {
	ctx := stream.Context()
	var reset bool
	var err error
	if in.stream {
		err = plan.end(ctx, 0, nil)
	} else {
		reset, err = plan.beforeAnswer(ctx)
	}
	switch {
	case err != nil:
		return status.FromContextError(err).Err()
	case reset:
		return status.Error(codes.Unavailable, faultResetMessage)
	}
	return stream.Send(completeMessage(in, p))
}

// submit queues the request, and records it under id (when not empty) for
// Abort; the caller must call done.
func (g *GRPCService) submit(id string, in genInput) (*Handle, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.flights[id]; dup && id != "" {
		return nil, status.Errorf(codes.InvalidArgument, "Request id %q is already in flight.", id)
	}
	h, err := g.engine.Submit(Request{PromptTokens: in.prompt, MaxTokens: in.maxTokens, IgnoreEOS: in.ignoreEOS, Key: in.key})
	if err != nil {
		return nil, grpcError(err, g.engine.Options())
	}
	if id != "" {
		g.flights[id] = h
	}
	return h, nil
}

// done forgets the request and aborts it if it has not ended.
func (g *GRPCService) done(id string, h *Handle) {
	g.mu.Lock()
	if g.flights[id] == h {
		delete(g.flights, id)
	}
	g.mu.Unlock()
	h.Close()
}

// HealthCheck reports whether the engine runs.
func (s engineServer) HealthCheck(context.Context, *enginepb.HealthCheckRequest) (*enginepb.HealthCheckResponse, error) {
	if s.g.engine.Stopped() {
		return &enginepb.HealthCheckResponse{Healthy: false, Message: "the engine has stopped"}, nil
	}
	return &enginepb.HealthCheckResponse{Healthy: true, Message: "healthy"}, nil
}

// Abort ends the named requests in flight: each one's Generate stream ends
// with a complete message whose finish_reason is "abort". Unknown ids are
// ignored, as vLLM does.
func (s engineServer) Abort(_ context.Context, req *enginepb.AbortRequest) (*enginepb.AbortResponse, error) {
	g := s.g
	var hs []*Handle
	g.mu.Lock()
	for _, id := range req.GetRequestIds() {
		if h, ok := g.flights[id]; ok {
			hs = append(hs, h)
		}
	}
	g.mu.Unlock()
	for _, h := range hs {
		h.Close() // Close may be called from any goroutine
	}
	return &enginepb.AbortResponse{}, nil
}

// grpcError maps an error of Engine.Submit or Handle.Wait to its gRPC
// status, with the HTTP API's messages (submitError).
func grpcError(err error, opts Options) error {
	code := codes.Internal
	switch {
	case errors.Is(err, ErrQueueFull):
		code = codes.ResourceExhausted
	case errors.Is(err, ErrTooLong), errors.Is(err, ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, ErrStopped):
		code = codes.Unavailable
	}
	return status.Error(code, submitError(err, opts).message)
}
