// Command slotgate-demo shows slotgate doing its job in one command: it
// starts enginesim (a simulated engine with 8 sequences) and slotgate in
// front of it (N=8, Q=4), drives a burst of many more concurrent streams
// than N+Q with slotgate-loadgen, shows the slots, the queue and the
// rejections while it runs, and ends with a summary. Every process it
// starts is stopped before it exits, also on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are the demo's settings; the defaults make the burst visible.
type options struct {
	bin         string
	slots       int
	queue       int
	concurrency int
	duration    time.Duration
	maxTokens   int
	speedup     float64
	summaryJSON string
	serve       bool
	proxyListen string
	adminListen string
	grpcListen  string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("slotgate-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "folder holding slotgate, enginesim and slotgate-loadgen")
	fs.IntVar(&o.slots, "slots", 8, "N: slotgate's engine slots, and enginesim's --max-num-seqs")
	fs.IntVar(&o.queue, "queue", 4, "Q: slotgate's queue places")
	fs.IntVar(&o.concurrency, "concurrency", 64, "concurrent streams the load generator keeps open")
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "how long the burst lasts")
	fs.IntVar(&o.maxTokens, "max-tokens", 64, "tokens generated per request")
	fs.Float64Var(&o.speedup, "speedup-ratio", 10, "enginesim's speed-up over its GPU timing model")
	fs.StringVar(&o.summaryJSON, "summary-json", "", "also write the summary as JSON to this file")
	fs.StringVar(&o.proxyListen, "listen", "127.0.0.1:0", "slotgate's proxy address (port 0: any free port)")
	fs.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:0", "slotgate's admin address (port 0: any free port)")
	fs.StringVar(&o.grpcListen, "admin-grpc-listen", "127.0.0.1:0", "slotgate's gRPC admin address (port 0: any free port)")
	fs.BoolVar(&o.serve, "serve", false, "start enginesim and slotgate, print curl examples and serve until Ctrl-C, without a burst")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.slots < 1 || o.queue < 2 || o.concurrency < 1 || o.duration <= 0 || o.maxTokens < 1 || o.speedup <= 0 {
		errs = append(errs, errors.New("--slots ≥ 1, --queue ≥ 2, --concurrency ≥ 1, --max-tokens ≥ 1, --duration and --speedup-ratio > 0"))
	}
	for _, name := range []string{"slotgate", "enginesim", "slotgate-loadgen"} {
		if _, err := os.Stat(filepath.Join(o.bin, name)); err != nil {
			errs = append(errs, fmt.Errorf("--bin %s: %w (run make build-all first)", o.bin, err))
		}
	}
	return o, errors.Join(errs...)
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slotgate-demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "slotgate-demo:", err)
		os.Exit(1)
	}
}
