package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/sim"
)

// shutdownTimeout bounds the graceful shutdown: how long requests in flight
// may take to finish after a signal.
const shutdownTimeout = 30 * time.Second

// serve builds the engine and its servers, serves until a signal, and
// returns the exit status. It owns its goroutines, the engine's Run and
// each server's Serve, and all have ended when it returns.
func serve(cfg Config, log *zap.Logger, signals <-chan os.Signal) int {
	eng, err := sim.New(cfg.Engine)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return exitConfig
	}
	srv, err := newServers(cfg, eng, log)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return exitFailed
	}
	log.Info("listening", srv.addrs()...)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	serveErr := srv.start(&wg)
	code := await(srv, log, signals, serveErr)
	srv.close() // after a failure, the servers still serving
	cancel()    // after the servers: requests in flight finished with a live engine
	wg.Wait()
	logFinalStats(log, eng.Stats(), srv.faults.Injected())
	return code
}

// await serves until a signal, then shuts the servers down gracefully: no
// new connections or calls, those in flight finish, up to shutdownTimeout.
// A second signal, or the timeout, closes every connection at once (exit
// 1). A server that fails ends it at once (exit 1).
func await(srv *servers, log *zap.Logger, signals <-chan os.Signal, serveErr <-chan error) int {
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
	go func() { done <- srv.shutdown(ctx) }() // ended below on every path
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown timeout: closing connections still open", zap.Error(err))
			srv.close()
			return exitFailed
		}
	case <-signals:
		log.Warn("second signal: closing every connection now")
		srv.close()
		<-done
		return exitFailed
	}
	code := exitOK
	for range srv.count() {
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("server failed", zap.Error(err))
			code = exitFailed
		}
	}
	if code == exitOK {
		log.Info("stopped")
	}
	return code
}
