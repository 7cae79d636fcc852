package loadgrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// DefaultStopTimeout is ServeOptions.StopTimeout's default.
const DefaultStopTimeout = 5 * time.Second

// ServeOptions configure Serve. The zero value is ready to use.
type ServeOptions struct {
	// StopTimeout bounds the graceful stop once ctx ends: calls still
	// running after it are cut off. Default DefaultStopTimeout; it must
	// not be negative.
	StopTimeout time.Duration
	// ServerOptions are passed to grpc.NewServer.
	ServerOptions []grpc.ServerOption
	// Draining, when closed, turns every health status to NOT_SERVING
	// while the server goes on serving: a draining sidecar tells gRPC
	// probes what its HTTP readiness already says. Nil never closes.
	Draining <-chan struct{}
}

// Serve serves on lis, until ctx ends, a gRPC server with LoadReporter
// reading from src, the standard health service (grpc.health.v1.Health,
// SERVING for "" and for slotgate.load.v1.LoadReporter) and reflection.
//
// When opts.Draining closes, health turns NOT_SERVING and serving goes
// on. When ctx ends, Serve sets every health status to NOT_SERVING, ends the
// WatchLoad streams with UNAVAILABLE (Service.Shutdown), and stops the
// server gracefully; calls still running after opts.StopTimeout, such as
// health watches, are cut off. It then returns nil, with every goroutine
// it started ended.
//
// Serve always closes lis. It returns an error, without waiting for ctx,
// when src is nil, opts are invalid, or lis fails to accept.
func Serve(ctx context.Context, lis net.Listener, src Source, opts ServeOptions) error {
	svc, err := NewService(src)
	if err == nil && opts.StopTimeout < 0 {
		err = fmt.Errorf("loadgrpc: StopTimeout %v is negative", opts.StopTimeout)
	}
	if err != nil {
		_ = lis.Close()
		return err
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	srv := grpc.NewServer(opts.ServerOptions...)
	svc.Register(srv)
	hs := health.NewServer()
	hs.SetServingStatus(loadv1.LoadReporter_ServiceDesc.ServiceName, healthgrpc.HealthCheckResponse_SERVING)
	healthgrpc.RegisterHealthServer(srv, hs)
	reflection.Register(srv)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	if err := waitForStop(ctx, served, opts.Draining, hs); err != nil {
		srv.Stop() // ends the calls on connections already accepted
		return fmt.Errorf("loadgrpc: serve: %w", err)
	}

	// Order matters: health first, so that probes see the stop coming;
	// then the watches, which would otherwise hold GracefulStop until
	// StopTimeout.
	hs.Shutdown()
	svc.Shutdown()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(opts.StopTimeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		srv.Stop()
		<-stopped
	}
	// srv.Serve returns nil after a stop, or ErrServerStopped when the
	// stop came before it started.
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("loadgrpc: serve: %w", err)
	}
	return nil
}

// waitForStop waits until ctx ends, and returns nil then, or until the
// server fails, and returns its error. Meanwhile, when draining closes,
// every health status turns NOT_SERVING.
func waitForStop(ctx context.Context, served <-chan error, draining <-chan struct{}, hs *health.Server) error {
	for {
		select {
		case err := <-served:
			if err == nil { // only a stop ends Serve without an error
				err = errors.New("stopped unexpectedly")
			}
			return err
		case <-draining:
			hs.Shutdown()
			draining = nil
		case <-ctx.Done():
			return nil
		}
	}
}
