package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/slotgate/slotgate/sim"
)

// servers are enginesim's HTTP server and, with --grpc-listen, its gRPC
// server, each on its listener, both in front of one engine.
type servers struct {
	http   *http.Server
	httpLn net.Listener
	grpc   *grpc.Server // nil without --grpc-listen
	grpcLn net.Listener
	svc    *sim.GRPCService
	faults *sim.Faults // shared by both servers
}

// newServers builds the servers and opens their listeners; on failure it
// closes what it opened.
func newServers(cfg Config, eng *sim.Engine, log *zap.Logger) (*servers, error) {
	faults, err := sim.NewFaults(cfg.Faults, cfg.Seed)
	if err != nil {
		return nil, err
	}
	h, err := sim.NewHandler(sim.ServerOptions{
		Engine: eng, Model: cfg.Model, Dialect: cfg.Dialect, Seed: cfg.Seed, Faults: faults,
		Registry: prometheus.NewRegistry(), Logger: log.Named("server"),
	})
	if err != nil {
		return nil, err
	}
	s := &servers{faults: faults, http: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}}
	if s.httpLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.GRPCListen == "" {
		return s, nil
	}
	if s.svc, err = sim.NewGRPCService(sim.GRPCOptions{Engine: eng, Seed: cfg.Seed, Faults: s.faults, Logger: log.Named("grpc")}); err != nil {
		s.httpLn.Close()
		return nil, err
	}
	if s.grpcLn, err = net.Listen("tcp", cfg.GRPCListen); err != nil {
		s.httpLn.Close()
		return nil, fmt.Errorf("grpc: %w", err)
	}
	// WaitForHandlers: Stop returns once every handler has, so that none
	// outlives serve.
	s.grpc = grpc.NewServer(grpc.WaitForHandlers(true))
	s.svc.Register(s.grpc)
	return s, nil
}

// addrs are the "listening" line's fields: addr, the HTTP API's, and
// grpc_addr with --grpc-listen.
func (s *servers) addrs() []zap.Field {
	fields := []zap.Field{zap.String("addr", s.httpLn.Addr().String())}
	if s.grpc != nil {
		fields = append(fields, zap.String("grpc_addr", s.grpcLn.Addr().String()))
	}
	return fields
}

// count is the number of servers.
func (s *servers) count() int {
	if s.grpc != nil {
		return 2
	}
	return 1
}

// start runs each server's Serve in a goroutine of wg. The channel gets
// each one's result when it returns, and holds them all.
func (s *servers) start(wg *sync.WaitGroup) <-chan error {
	errs := make(chan error, 2)
	wg.Go(func() { errs <- s.http.Serve(s.httpLn) })
	if s.grpc != nil {
		wg.Go(func() {
			if err := s.grpc.Serve(s.grpcLn); err != nil {
				errs <- fmt.Errorf("grpc: %w", err)
				return
			}
			errs <- nil
		})
	}
	return errs
}

// shutdown stops the servers gracefully and at once: they take no new
// connections or calls, and those in flight finish; gRPC health reports
// NOT_SERVING and its Watch streams end first, as they never would, and
// so do the injected faults' waits (stalls, never-ending answers). When
// ctx ends first, the gRPC server is stopped; the HTTP server is the
// caller's to close. It returns when both have stopped.
func (s *servers) shutdown(ctx context.Context) error {
	s.faults.Shutdown() // stalls and never-ending answers end, or they would hold the shutdown up
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs <- s.http.Shutdown(ctx) })
	if s.grpc != nil {
		s.svc.Shutdown()
		wg.Go(func() { errs <- gracefulStop(ctx, s.grpc) })
	}
	wg.Wait()
	close(errs)
	var err error
	for e := range errs {
		err = errors.Join(err, e)
	}
	return err
}

// gracefulStop is GracefulStop bounded by ctx: when ctx ends first, Stop
// closes every connection, and it returns ctx's error.
func gracefulStop(ctx context.Context, g *grpc.Server) error {
	stopped := make(chan struct{})
	go func() { // ended below on every path: Stop makes GracefulStop return
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		g.Stop()
		<-stopped
		return fmt.Errorf("grpc: %w", ctx.Err())
	}
}

// close closes every connection at once; it may follow shutdown.
func (s *servers) close() {
	_ = s.http.Close()
	if s.grpc != nil {
		s.grpc.Stop()
	}
}
