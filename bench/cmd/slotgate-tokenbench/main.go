package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// options are the driver's settings; the defaults are the ones
// BENCHMARKS.md reports.
type options struct {
	bin, out      string
	configs       string
	reps          int
	deadline      time.Duration
	slots, queue  int
	waiting       int
	prefillTokens int
	engine        engineSpec
	workload      workload
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	o := options{workload: workload{ShortPrompt: span{20, 80}, ShortOutput: span{16, 32}, HugePrompt: span{6000, 16000}}}
	fs := flag.NewFlagSet("slotgate-tokenbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "", "folder holding slotgate and enginesim; empty: build both into a temporary folder with go build (from slotgate's module root)")
	fs.StringVar(&o.out, "out", "bench/results", "folder for the JSON results, <time>-tokens.json")
	fs.StringVar(&o.configs, "configs", strings.Join(configKeys, ","), "configurations to run, comma-separated: n (N alone), nw (N and W), np (N and P), nwp (N, W and P)")
	fs.IntVar(&o.reps, "reps", 1, "runs of each configuration; the figures are their medians")
	fs.DurationVar(&o.deadline, "deadline", 30*time.Second, "the clients' deadline for a whole request; a request still unanswered then counts as timed out")
	fs.IntVar(&o.slots, "slots", 16, "N: slotgate's --engine-request-limit, and enginesim's --max-num-seqs")
	fs.IntVar(&o.queue, "queue", 64, "Q: slotgate's --request-queue-limit")
	fs.IntVar(&o.waiting, "waiting", 4, "W: slotgate's --engine-request-waiting-limit in the nw and nwp configurations")
	fs.IntVar(&o.prefillTokens, "prefill-tokens", 8192, "P: slotgate's --engine-prefill-token-limit in the np and nwp configurations")
	fs.IntVar(&o.engine.MaxNumBatchedTokens, "max-num-batched-tokens", 8192, "enginesim's chunked-prefill budget per step")
	fs.Float64Var(&o.engine.Speedup, "speedup-ratio", 1, "enginesim's speed-up over its GPU timing model")
	fs.Uint64Var(&o.workload.Seed, "seed", 1, "seed of the arrivals, the mix and the prompts")
	fs.Float64Var(&o.workload.Rate, "rate", 30, "Poisson arrivals per second; 30 keeps enginesim (16 sequences, speed-up 1) busy without a growing queue, which 40 brings")
	fs.DurationVar(&o.workload.Duration, "duration", 30*time.Second, "how long each configuration's arrivals last")
	fs.Float64Var(&o.workload.HugeFraction, "huge-fraction", 0.02, "fraction of the requests that are huge prompts, 0 to 1")
	fs.Var(spanFlag{&o.workload.ShortPrompt}, "short-prompt", "short chat prompts' length in words (about a token each), MIN-MAX")
	fs.Var(spanFlag{&o.workload.ShortOutput}, "short-max-tokens", "short prompts' max_tokens, MIN-MAX")
	fs.Var(spanFlag{&o.workload.HugePrompt}, "huge-prompt", "huge prompts' length in token ids, MIN-MAX")
	fs.IntVar(&o.workload.HugeOutput, "huge-max-tokens", 16, "huge prompts' max_tokens")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: the driver takes only flags", fs.Args())
	}
	o.engine.MaxNumSeqs = o.slots
	// The longest request must fit the engine: prompt plus output.
	o.engine.MaxModelLen = max(o.workload.HugePrompt.Max+o.workload.HugeOutput,
		o.workload.ShortPrompt.Max*4+o.workload.ShortOutput.Max, 8192)
	return o, o.validate()
}

// validate returns every problem at once, each naming its flag and value.
func (o options) validate() error {
	var errs []error
	bad := func(name string, v any, want string) { errs = append(errs, fmt.Errorf("--%s %v: %s", name, v, want)) }
	w := o.workload
	for _, c := range []struct {
		name string
		v    float64
		ok   bool
		want string
	}{
		{"reps", float64(o.reps), o.reps >= 1, "must be at least 1"},
		{"deadline", o.deadline.Seconds(), o.deadline > 0, "must be above 0"},
		{"slots", float64(o.slots), o.slots >= 1, "must be at least 1"},
		{"queue", float64(o.queue), o.queue >= 0, "must be at least 0"},
		{"waiting", float64(o.waiting), o.waiting >= 1, "must be at least 1"},
		{"prefill-tokens", float64(o.prefillTokens), o.prefillTokens >= 1, "must be at least 1"},
		{"max-num-batched-tokens", float64(o.engine.MaxNumBatchedTokens), o.engine.MaxNumBatchedTokens >= o.slots, "must be at least --slots"},
		{"speedup-ratio", o.engine.Speedup, o.engine.Speedup > 0, "must be above 0"},
		{"rate", w.Rate, w.Rate > 0 && w.Rate <= 10_000, "must be above 0 and at most 10000"},
		{"duration", w.Duration.Seconds(), w.Duration > 0, "must be above 0"},
		{"huge-fraction", w.HugeFraction, w.HugeFraction >= 0 && w.HugeFraction <= 1, "must be from 0 to 1"},
		{"huge-max-tokens", float64(w.HugeOutput), w.HugeOutput >= 1, "must be at least 1"},
	} {
		if !c.ok {
			bad(c.name, c.v, c.want)
		}
	}
	for k := range strings.SplitSeq(o.configs, ",") {
		if !slices.Contains(configKeys, strings.TrimSpace(k)) {
			bad("configs", o.configs, fmt.Sprintf("%q is not one of %s", k, strings.Join(configKeys, ", ")))
		}
	}
	if o.bin != "" {
		for _, name := range []string{"slotgate", "enginesim"} {
			if _, err := os.Stat(filepath.Join(o.bin, name)); err != nil {
				errs = append(errs, fmt.Errorf("--bin %s: %w (build it: go build -o %s/ ./cmd/%s)", o.bin, err, o.bin, name))
			}
		}
	}
	return errors.Join(errs...)
}

// spanFlag parses MIN-MAX into a span.
type spanFlag struct{ s *span }

func (f spanFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.String()
}

func (f spanFlag) Set(v string) error {
	var s span
	if _, err := fmt.Sscanf(v, "%d-%d", &s.Min, &s.Max); err != nil || s.Min < 1 || s.Max < s.Min {
		return fmt.Errorf("%q: want MIN-MAX, 1 <= MIN <= MAX", v)
	}
	*f.s = s
	return nil
}

// selected returns the configurations --configs names, in table order.
func (o options) selected() []config {
	var out []config
	for _, k := range configKeys {
		if slices.ContainsFunc(strings.Split(o.configs, ","), func(s string) bool { return strings.TrimSpace(s) == k }) {
			out = append(out, configFor(k, o))
		}
	}
	return out
}

func main() {
	childproc.Main("slotgate-tokenbench", parseOptions, func(ctx context.Context, o options) error {
		err := run(ctx, o, os.Args, os.Stdout)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted (every process started was stopped): %w", err)
		}
		return err
	})
}

// run builds the binaries unless --bin names them, runs the
// configurations, prints the table and writes the JSON.
func run(ctx context.Context, o options, argv []string, out io.Writer) error {
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "slotgate-tokenbench-bin-")
		if err != nil {
			return fmt.Errorf("binary folder: %w", err)
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(out, "building slotgate and enginesim into %s\n", dir)
		if err := buildBinaries(ctx, dir); err != nil {
			return err
		}
		o.bin = dir
	}
	cfgs := o.selected()
	arrivals := plan(o.workload)
	fmt.Fprintf(out, "%d arrivals (%d huge) in %s at %g/s, seed %d; %d run(s) of %d configuration(s)\n",
		len(arrivals), countKind(arrivals, kindHuge), o.workload.Duration, o.workload.Rate, o.workload.Seed, o.reps, len(cfgs))
	runs, err := runAll(ctx, o, cfgs, arrivals, out)
	if err != nil {
		return err
	}
	res := newResults(o, argv, cfgs, runs)
	writeTable(out, res)
	path, err := save(o.out, res)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nslotgate-tokenbench: results written to %s\n", path)
	return nil
}

func countKind(as []arrival, k kind) int {
	n := 0
	for _, a := range as {
		if a.Kind == k {
			n++
		}
	}
	return n
}
