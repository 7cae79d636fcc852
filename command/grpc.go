package command

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/load/orcagrpc"
)

// msgNoGRPCEngine answers gRPC calls when no engine gRPC URL is set.
const msgNoGRPCEngine = "slotgate: no gRPC engine is configured; set --engine-grpc-url (SLOTGATE_ENGINE_GRPC_URL)"

// grpcParts are the gRPC proxy: its servers and its connection to the
// engine. srv takes the calls on the proxy port (through net/http);
// --grpc-listen has servers of its own, built alike (listen), so that a
// drain can send them GOAWAY without stopping the proxy port's.
type grpcParts struct {
	srv    *grpc.Server
	engine *grpc.ClientConn // nil without --engine-grpc-url
	// build makes a server that answers as srv does, with more options.
	build func(more ...grpc.ServerOption) *grpc.Server

	mu      sync.Mutex
	listen  []*grpc.Server // --grpc-listen's, in the order made
	stopped bool           // stop or stopNow began: a server made now is stopped
}

// grpcDeps are the parts of the app the gRPC proxy serves with.
type grpcDeps struct {
	gate     *gate.Gate
	ready    func() error
	draining <-chan struct{} // closes when the drain begins
	// orca, when set, is served out of band; trailer, when set, gives
	// each forwarded call's trailers their load report (--orca-header).
	orca    *orcagrpc.Service
	trailer func() metadata.MD
}

// newGRPCParts builds the gRPC proxy over the gate that HTTP uses, so
// that both protocols share the engine's slots. The server answers
// grpc.health.v1 itself, from readiness, and ORCA's OpenRcaService, from
// orca (when not nil), the load report a gRPC client's weighted round
// robin reads on each backend; every other service goes to the engine,
// server reflection included.
func newGRPCParts(cfg config.Config, deps grpcDeps, log *zap.Logger) (*grpcParts, error) {
	parts := &grpcParts{}
	var opts []grpc.ServerOption
	if cfg.EngineGRPCURL == nil {
		opts = append(opts, grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			return status.Error(codes.Unimplemented, msgNoGRPCEngine)
		}))
	} else {
		dial := append(grpcproxy.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		cc, err := grpc.NewClient(cfg.EngineGRPCURL.Host, dial...)
		if err != nil {
			return nil, err
		}
		p, err := grpcproxy.New(grpcproxy.Options{
			Gate: deps.gate, Engine: cc, MaxMessageBytes: cfg.GRPCMaxMessageBytes, RetryAfter: cfg.RetryAfter,
			Trailer: deps.trailer, Logger: logging.Slog(log.Named("grpc")),
		})
		if err != nil {
			_ = cc.Close()
			return nil, err
		}
		parts.engine = cc
		opts = p.ServerOptions()
	}
	parts.build = func(more ...grpc.ServerOption) *grpc.Server {
		srv := grpc.NewServer(append(slices.Clip(opts), more...)...)
		healthgrpc.RegisterHealthServer(srv, &readinessHealth{ready: deps.ready, draining: deps.draining})
		if deps.orca != nil {
			deps.orca.Register(srv)
		}
		return srv
	}
	parts.srv = parts.build()
	return parts, nil
}

// close ends the connection to the engine; the server is stopped by the
// lifecycle.
func (gp *grpcParts) close() {
	if gp.engine != nil {
		_ = gp.engine.Close()
	}
}

// stopping marks the proxy's servers as stopping, so that a server
// listenServer makes from then on is stopped at once, and returns them
// all.
func (gp *grpcParts) stopping() []*grpc.Server {
	gp.mu.Lock()
	defer gp.mu.Unlock()
	gp.stopped = true
	return append([]*grpc.Server{gp.srv}, gp.listen...)
}

// stop ends the servers: gracefully, letting calls finish until ctx ends,
// then at once.
func (gp *grpcParts) stop(ctx context.Context) {
	var wg sync.WaitGroup
	all := gp.stopping()
	for _, srv := range all {
		wg.Go(srv.GracefulStop)
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		for _, srv := range all {
			srv.Stop()
		}
		<-stopped
	}
}

// stopNow ends the servers at once, cutting their calls.
func (gp *grpcParts) stopNow() {
	for _, srv := range gp.stopping() {
		srv.Stop()
	}
}

// isGRPC reports whether r is a gRPC call: HTTP/2 with a gRPC content
// type, as grpc-go's own ServeHTTP requires.
func isGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// protocolMux sends gRPC calls on the proxy port to the gRPC server and
// everything else to the HTTP proxy.
type protocolMux struct {
	http http.Handler
	grpc http.Handler
	// closing reports whether a drain began (proxy.Proxy.Closing): a gRPC
	// call's answer then closes its connection, as the proxy's do.
	closing func() bool
}

func (m protocolMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isGRPC(r) {
		if m.closing != nil && m.closing() {
			// net/http's HTTP/2 server takes it off the answer and sends
			// GOAWAY: the calls in flight end, and the client's next
			// ones go over a new connection, through the updated
			// endpoints.
			w.Header()["Connection"] = []string{"close"}
		}
		m.grpc.ServeHTTP(w, r)
		return
	}
	m.http.ServeHTTP(w, r)
}

// readinessHealth answers grpc.health.v1 from slotgate's readiness (the
// engine's health and the drain), for any service name, so that a
// Kubernetes gRPC probe on the proxy port reads what /readyz does.
type readinessHealth struct {
	healthgrpc.UnimplementedHealthServer
	ready func() error
	// draining closes when the drain begins: Watch streams end then, so
	// that they hold up neither the proxy port's shutdown nor the gRPC
	// server's graceful stop.
	draining <-chan struct{}
}

// watchPoll is how often Watch looks at readiness again.
const watchPoll = time.Second

func (h *readinessHealth) status() healthgrpc.HealthCheckResponse_ServingStatus {
	if h.ready() != nil {
		return healthgrpc.HealthCheckResponse_NOT_SERVING
	}
	return healthgrpc.HealthCheckResponse_SERVING
}

func (h *readinessHealth) Check(context.Context, *healthgrpc.HealthCheckRequest) (*healthgrpc.HealthCheckResponse, error) {
	return &healthgrpc.HealthCheckResponse{Status: h.status()}, nil
}

// Watch sends the status, then each change, until the call ends or the
// drain begins: it then sends NOT_SERVING and ends the stream with
// UNAVAILABLE, as a server going away does.
func (h *readinessHealth) Watch(_ *healthgrpc.HealthCheckRequest, stream healthgrpc.Health_WatchServer) error {
	last := healthgrpc.HealthCheckResponse_SERVICE_UNKNOWN
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		if s := h.status(); s != last {
			if err := stream.Send(&healthgrpc.HealthCheckResponse{Status: s}); err != nil {
				return err
			}
			last = s
		}
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-h.draining:
			if last != healthgrpc.HealthCheckResponse_NOT_SERVING {
				if err := stream.Send(&healthgrpc.HealthCheckResponse{Status: healthgrpc.HealthCheckResponse_NOT_SERVING}); err != nil {
					return err
				}
			}
			return status.Error(codes.Unavailable, "slotgate is draining")
		case <-tick.C:
		}
	}
}
