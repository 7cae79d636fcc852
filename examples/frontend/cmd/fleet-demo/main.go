// Command fleet-demo is `make demo-fleet`: Dynamo's request-rejection
// picture run end to end on one machine. It starts a fleet of workers,
// each an enginesim behind a slotgate with N, W, Q and busy thresholds
// set, then the reference frontend (examples/frontend) in load mode, and
// drives one burst of long and short prompts at it with slotgate-loadgen
// while it shows each worker's slots, prefill, queue, KV use and busy
// state once a second. Once the fleet has drained it drives the same
// burst through a second frontend in round-robin mode, and ends with a
// summary of both. Every process it starts is stopped before it exits,
// also on Ctrl-C.
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

// options are the demo's settings; the defaults overload a fleet of three
// small workers within seconds on two cores.
type options struct {
	bin, frontend      string
	workers            int
	slots, waiting     int
	queue              int
	kvBlocks           int
	decodeThreshold    float64
	prefillThreshold   int
	speedup            float64
	rate               float64
	duration           time.Duration
	promptTokens       string
	maxTokens          string
	cooldown           time.Duration
	retries, rrRetries int
	summaryJSON        string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleet-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "folder holding slotgate, enginesim and slotgate-loadgen")
	fs.StringVar(&o.frontend, "frontend", "", "the frontend binary (default: frontend in --bin)")
	fs.IntVar(&o.workers, "workers", 3, "workers in the fleet: an enginesim and a slotgate each")
	fs.IntVar(&o.slots, "slots", 8, "N: each slotgate's engine slots, and each enginesim's --max-num-seqs")
	fs.IntVar(&o.waiting, "waiting", 4, "W: each slotgate's requests in prefill at most")
	fs.IntVar(&o.queue, "queue", 4, "Q: each slotgate's queue places")
	fs.IntVar(&o.kvBlocks, "kv-blocks", 600, "each enginesim's KV cache blocks (16 tokens each)")
	fs.Float64Var(&o.decodeThreshold, "decode-threshold", 0.9, "busy when KV blocks in use exceed this fraction (--active-decode-blocks-threshold)")
	fs.IntVar(&o.prefillThreshold, "prefill-threshold", 4000, "busy when prompt tokens in prefill exceed this (--active-prefill-tokens-threshold)")
	fs.Float64Var(&o.speedup, "speedup-ratio", 2, "enginesim's speed-up over its GPU timing model")
	fs.Float64Var(&o.rate, "rate", 18, "arrivals per second of the burst (Poisson, the same seed in both modes)")
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "how long each burst lasts")
	fs.StringVar(&o.promptTokens, "prompt-tokens", "uniform:64:3000", "prompt lengths, slotgate-loadgen's syntax: long and short mixed")
	fs.StringVar(&o.maxTokens, "max-tokens", "64", "tokens generated per request, slotgate-loadgen's syntax")
	fs.DurationVar(&o.cooldown, "cooldown", time.Second, "the load-mode frontend's --cooldown")
	fs.IntVar(&o.retries, "retries", 2, "the load-mode frontend's --retries")
	fs.IntVar(&o.rrRetries, "rr-retries", 0, "the round-robin frontend's --retries (0: a plain Kubernetes Service)")
	fs.StringVar(&o.summaryJSON, "summary-json", "", "also write the summary as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.frontend == "" {
		o.frontend = filepath.Join(o.bin, "frontend")
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	if o.workers < 1 || o.slots < 1 || o.waiting < 1 || o.queue < 0 || o.kvBlocks < 2 {
		errs = append(errs, fmt.Errorf("--workers %d, --slots %d, --waiting %d ≥ 1, --queue %d ≥ 0, --kv-blocks %d ≥ 2",
			o.workers, o.slots, o.waiting, o.queue, o.kvBlocks))
	}
	if o.rate <= 0 || o.duration <= 0 || o.speedup <= 0 || o.cooldown <= 0 {
		errs = append(errs, fmt.Errorf("--rate %v, --duration %s, --speedup-ratio %v and --cooldown %s must be positive",
			o.rate, o.duration, o.speedup, o.cooldown))
	}
	if o.decodeThreshold < 0 || o.decodeThreshold > 1 || o.prefillThreshold < 0 {
		errs = append(errs, fmt.Errorf("--decode-threshold %v: want 0..1; --prefill-threshold %d: want ≥ 0",
			o.decodeThreshold, o.prefillThreshold))
	}
	if o.retries < 0 || o.rrRetries < 0 {
		errs = append(errs, fmt.Errorf("--retries %d and --rr-retries %d must not be negative", o.retries, o.rrRetries))
	}
	for _, path := range []string{filepath.Join(o.bin, "slotgate"), filepath.Join(o.bin, "enginesim"),
		filepath.Join(o.bin, "slotgate-loadgen"), o.frontend} {
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("%w (run make demo-fleet, which builds them)", err))
		}
	}
	return errors.Join(errs...)
}

func main() {
	childproc.Main("fleet-demo", parseOptions, func(ctx context.Context, o options) error { return run(ctx, o, os.Stdout) })
}
