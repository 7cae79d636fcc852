// Command frontend is slotgate's reference frontend: a push router in
// front of a fleet of slotgate sidecars, in the shape of Dynamo's. It
// follows each worker's load stream, leaves out the busy workers and those
// that just answered 529, and sends each request to the least loaded of
// the rest; with --policy roundrobin it rotates blindly instead. It is an
// example and a test fixture (make demo-fleet runs it), not a product.
//
//	frontend --listen 127.0.0.1:8070 \
//	    --worker proxy=http://127.0.0.1:8080,admin=http://127.0.0.1:9090 \
//	    --worker proxy=http://127.0.0.1:8081,admin=http://127.0.0.1:9091
//
// GET /frontend/stats answers its counters and each worker's state as
// JSON; every other request is routed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
)

// PathStats is where the frontend answers its Stats.
const PathStats = "/frontend/stats"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit status: 0,
// 1 when serving failed, 2 for bad flags.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	if err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return 2
	}
	if err := serve(ctx, o, log); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	return 0
}

// serve runs the router and its HTTP server until ctx ends, then shuts the
// server down (requests in flight get five seconds) and waits for both.
func serve(ctx context.Context, o options, log *slog.Logger) error {
	r, err := router.New(router.Options{
		Workers: o.workers, Policy: o.policy, Cooldown: o.cooldown, Retries: o.retries,
		Logger: log.With("component", "router"), Watch: watchOptions(log),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathStats, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.Stats())
	})
	mux.Handle("/", r)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	runCtx, stopRouter := context.WithCancel(context.Background())
	routed := make(chan error, 1)
	go func() { routed <- r.Run(runCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "policy", o.policy, "workers", len(o.workers),
		"cooldown", o.cooldown.String(), "retries", o.retries)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if serveErr == nil {
		serveErr = <-served
	}
	// The router outlives the server: requests in flight still route.
	stopRouter()
	<-routed
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	log.Info("stopped")
	return serveErr
}
