// Command slotgate-soak is slotgate's chaos soak: it starts enginesim with
// fault injection and slotgate in front of it, drives a seeded mix of
// HTTP and gRPC clients through slotgate for --duration or --requests,
// changes N and the faults and restarts the engine while it runs, checks
// slotgate's invariants (package soak), prints its counts and exits 1 on
// any violation. Example, the million-request soak:
//
//	go build -o bin/ ./cmd/...
//	bin/slotgate-soak --bin bin --requests 1000000 --concurrency 128 --out /tmp/slotgate-soak
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/slotgate/slotgate/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal ends the load and the final checks run; a second
	// ends the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; it returns the exit status: 0 when no
// invariant broke, 1 on a violation or when the soak could not run, 2 on
// bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parse(args, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "slotgate-soak:", err)
		return 2
	}
	opts.Progress = stderr
	rep, err := soak.Run(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "slotgate-soak:", err)
		return 1
	}
	if err := rep.Write(stdout); err != nil {
		fmt.Fprintln(stderr, "slotgate-soak:", err)
		return 1
	}
	if !rep.OK() {
		fmt.Fprintf(stderr, "slotgate-soak: %d violations; logs in %s\n", len(rep.Violations), opts.OutDir)
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (soak.Options, error) {
	var o soak.Options
	fs := flag.NewFlagSet("slotgate-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.BinDir, "bin", "bin", "directory holding the slotgate and enginesim binaries")
	fs.StringVar(&o.OutDir, "out", "", "directory for the processes' logs (slotgate.log has the access log); default a new temporary directory")
	fs.DurationVar(&o.Duration, "duration", 0, "how long the load runs; 0: until --requests")
	fs.Int64Var(&o.Requests, "requests", 0, "stop the load once this many requests were sent, retries included; 0: until --duration")
	fs.IntVar(&o.Concurrency, "concurrency", 64, "client goroutines; most of them are refused with 529 at any moment, which is the point")
	fs.IntVar(&o.N, "N", 4, "slotgate's engine request limit at the start; it changes between N/2 and 2N while the soak runs")
	fs.IntVar(&o.Q, "Q", 8, "slotgate's request queue limit")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of every random choice")
	fs.BoolVar(&o.NoFaults, "no-faults", false, "run without enginesim's fault injection (and without the final N+Q burst, which needs it)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		return o, fmt.Errorf("set --duration or --requests")
	}
	if o.OutDir == "" {
		dir, err := os.MkdirTemp("", "slotgate-soak-")
		if err != nil {
			return o, err
		}
		o.OutDir = dir
	}
	return o, nil
}
