// Command slotgate-loadgen is slotgate's load generator: it sends
// OpenAI-style completion requests, or with --grpc vLLM's gRPC Generate
// calls, to slotgate or directly to an engine, in a closed loop
// (--concurrency) or an open loop (--mode open --rate), and reports status
// counts, TTFT, inter-token latency, end-to-end latency and throughput, as
// a table on stdout and optionally as JSON (--json). See README.md here and
// `slotgate-loadgen --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/loadgen/grpcload"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the run drains and reports; restoring the
	// default handling lets a second signal end the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], flagenv.Environ(os.Environ()), os.Stdout, os.Stderr, isTerminal(os.Stderr))
	stop()
	os.Exit(code)
}

// run is the whole program; it returns the exit status: 0 when the run was
// reported (whatever the answers were), 1 when the report could not be
// written, 2 when the configuration was refused. Progress goes to stderr,
// rewritten in place when terminal is true.
func run(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer, terminal bool) int {
	cfg, err := load(args, env)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return 0
	case cfg.showVersion:
		fmt.Fprintf(stdout, "slotgate-loadgen %s (%s)\n", version, commit)
		return 0
	case err != nil:
		flagenv.Report(stderr, "slotgate-loadgen", err)
		return 2
	}
	opts := cfg.opts
	opts.Progress, opts.Terminal = stderr, terminal
	if cfg.grpcURL != "" {
		s, err := grpcload.New(grpcload.Options{URL: cfg.grpcURL})
		if err != nil { // load checked the URL; this is a bug
			fmt.Fprintln(stderr, "slotgate-loadgen: "+err.Error())
			return 2
		}
		// Closing fails only when already closed; the report is written.
		defer func() { _ = s.Close() }()
		opts.Sender = s
	}
	g, err := loadgen.New(opts)
	if err != nil { // load checked everything New does; this is a bug
		fmt.Fprintln(stderr, "slotgate-loadgen: "+err.Error())
		return 2
	}
	out, err := openOutput(cfg.jsonPath, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "slotgate-loadgen: "+err.Error())
		return 1
	}
	report := g.Run(ctx)
	if err := out.write(report, stdout); err != nil {
		fmt.Fprintln(stderr, "slotgate-loadgen: "+err.Error())
		return 1
	}
	return 0
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
