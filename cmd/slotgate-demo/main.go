// Command slotgate-demo shows slotgate doing its job in one command.
//
// Its default mode, compare, sends the same burst (Poisson arrivals above
// the engine's capacity, from clients that retry a refusal as the OpenAI
// SDKs do and give up at a deadline) to two identical enginesim engines at
// once: one alone, its waiting queue unbounded as vLLM's is by default, and
// one behind slotgate (N, W and Q set from the engine's size). It shows both
// while the burst runs and ends with one table of the two runs.
//
// --mode hammer keeps the original burst: many more closed-loop streams
// than N+Q, each sending its next request the moment one is refused.
// --serve starts enginesim and slotgate and prints a guided tour instead.
//
// Every process it starts is stopped before it exits, also on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// The demo's modes.
const (
	modeCompare = "compare"
	modeHammer  = "hammer"
)

// options are the demo's settings; the defaults make the effect visible on
// a shared 2-core machine in well under a minute.
type options struct {
	bin         string
	mode        string
	slots       int
	waiting     int
	queue       int
	concurrency int
	rate        float64
	retry       int
	deadline    time.Duration
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
	fs.StringVar(&o.mode, "mode", modeCompare, "compare: the same burst without and with slotgate, side by side; hammer: closed-loop streams that resend at once when refused")
	fs.IntVar(&o.slots, "slots", 8, "N: slotgate's engine slots, and enginesim's --max-num-seqs")
	fs.IntVar(&o.waiting, "waiting", 4, "W: slotgate's admitted requests before their first token (compare mode and --serve); 0: no limit")
	fs.IntVar(&o.queue, "queue", 4, "Q: slotgate's queue places")
	fs.IntVar(&o.concurrency, "concurrency", 64, "hammer mode: concurrent streams the load generator keeps open")
	fs.Float64Var(&o.rate, "rate", 28, "compare mode: Poisson arrivals per second, about 1.7 times what enginesim with 8 sequences at speed-up 1 serves (16.5 a second)")
	fs.IntVar(&o.retry, "retry", 3, "compare mode: the clients' most tries per request, honouring Retry-After, as the OpenAI SDKs do")
	fs.DurationVar(&o.deadline, "deadline", 10*time.Second, "compare mode: the clients' deadline for a whole request, all its tries")
	fs.DurationVar(&o.duration, "duration", 0, "how long the burst lasts; 0: 15s in compare mode, 8s in hammer mode")
	fs.IntVar(&o.maxTokens, "max-tokens", 64, "tokens generated per request")
	fs.Float64Var(&o.speedup, "speedup-ratio", 0, "enginesim's speed-up over its GPU timing model; 0: 1 (GPU speed), 10 in hammer mode")
	fs.StringVar(&o.summaryJSON, "summary-json", "", "also write the summary as JSON to this file")
	fs.StringVar(&o.proxyListen, "listen", "127.0.0.1:0", "slotgate's proxy address (port 0: any free port)")
	fs.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:0", "slotgate's admin address (port 0: any free port)")
	fs.StringVar(&o.grpcListen, "admin-grpc-listen", "127.0.0.1:0", "slotgate's gRPC admin address (port 0: any free port)")
	fs.BoolVar(&o.serve, "serve", false, "start enginesim and slotgate, print a guided tour and serve until Ctrl-C, without a burst")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.applyModeDefaults()
	return o, o.validate()
}

// applyModeDefaults fills the settings whose default depends on the mode.
// Hammer mode keeps the original demo's figures exactly.
func (o *options) applyModeDefaults() {
	hammer := o.mode == modeHammer && !o.serve
	if o.duration == 0 {
		o.duration = 15 * time.Second
		if hammer {
			o.duration = 8 * time.Second
		}
	}
	if o.speedup == 0 {
		o.speedup = 1
		if hammer {
			o.speedup = 10
		}
	}
}

// validate returns every problem at once, each naming its flag and value.
func (o options) validate() error {
	var errs []error
	bad := func(flagName string, value any, want string) {
		errs = append(errs, fmt.Errorf("--%s %v: %s", flagName, value, want))
	}
	if o.mode != modeCompare && o.mode != modeHammer {
		bad("mode", o.mode, "must be compare or hammer")
	}
	if o.slots < 1 {
		bad("slots", o.slots, "must be at least 1")
	}
	if o.waiting < 0 || o.waiting > o.slots {
		bad("waiting", o.waiting, fmt.Sprintf("must be from 0 (no limit) to --slots (%d)", o.slots))
	}
	if o.queue < 2 {
		bad("queue", o.queue, "must be at least 2")
	}
	if o.concurrency < 1 {
		bad("concurrency", o.concurrency, "must be at least 1")
	}
	if o.rate <= 0 {
		bad("rate", o.rate, "must be above 0")
	}
	if o.retry < 1 {
		bad("retry", o.retry, "must be at least 1 (1 never retries)")
	}
	if o.deadline <= 0 {
		bad("deadline", o.deadline, "must be above 0")
	}
	if o.duration <= 0 {
		bad("duration", o.duration, "must be above 0")
	}
	if o.maxTokens < 1 {
		bad("max-tokens", o.maxTokens, "must be at least 1")
	}
	if o.speedup <= 0 {
		bad("speedup-ratio", o.speedup, "must be above 0")
	}
	for _, name := range []string{"slotgate", "enginesim", "slotgate-loadgen"} {
		if _, err := os.Stat(filepath.Join(o.bin, name)); err != nil {
			errs = append(errs, fmt.Errorf("--bin %s: %w (run make build-all first)", o.bin, err))
		}
	}
	return errors.Join(errs...)
}

func main() {
	childproc.Main("slotgate-demo", parseOptions, func(ctx context.Context, o options) error { return run(ctx, o, os.Stdout) })
}
