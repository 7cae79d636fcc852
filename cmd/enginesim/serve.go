package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/slotgate/slotgate/sim"
)

// shutdownTimeout bounds the graceful shutdown: how long requests in flight
// may take to finish after a signal.
const shutdownTimeout = 30 * time.Second

// serve builds the engine and its server, serves until a signal, and
// returns the exit status. It owns its two goroutines, the engine's Run and
// the server's Serve, and both have ended when it returns.
func serve(cfg Config, log *zap.Logger, signals <-chan os.Signal) int {
	eng, err := sim.New(cfg.Engine)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return exitConfig
	}
	h, err := sim.NewHandler(sim.ServerOptions{
		Engine: eng, Model: cfg.Model, Dialect: cfg.Dialect, Seed: cfg.Seed,
		Registry: prometheus.NewRegistry(), Logger: log.Named("server"),
	})
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return exitFailed
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return exitFailed
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()))
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() { _ = eng.Run(ctx) })
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	code := await(srv, log, signals, serveErr)
	cancel() // after the server: requests in flight finished with a live engine
	wg.Wait()
	return code
}

// await serves until a signal, then shuts the server down gracefully:
// no new connections, requests in flight finish, up to shutdownTimeout. A
// second signal, or the timeout, closes every connection at once (exit 1).
func await(srv *http.Server, log *zap.Logger, signals <-chan os.Signal, serveErr <-chan error) int {
	select {
	case err := <-serveErr:
		log.Error("server failed", zap.Error(err))
		return exitFailed
	case sig := <-signals:
		log.Info("signal received: shutting down", zap.String("signal", sig.String()))
	}
	ctx, stop := context.WithTimeout(context.Background(), shutdownTimeout)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }() // ended below on every path
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown timeout: closing connections still open", zap.Error(err))
			srv.Close()
			return exitFailed
		}
	case <-signals:
		log.Warn("second signal: closing every connection now")
		srv.Close()
		<-done
		return exitFailed
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("server failed", zap.Error(err))
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}
