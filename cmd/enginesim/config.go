package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/slotgate/slotgate/sim"
)

// Config is enginesim's validated configuration. Each field names its flag;
// the environment variables and defaults are in settings.go.
type Config struct {
	// Listen is the API address (--listen).
	Listen string
	// Model is the served model name (--model).
	Model string
	// Engine holds --max-num-seqs, --max-num-queued-reqs, --num-gpu-blocks,
	// --block-size, --max-num-batched-tokens, --data-parallel-size,
	// --max-model-len and --speedup-ratio.
	Engine sim.Options
	// Dialect is --metrics-dialect.
	Dialect sim.Dialect
	// Seed is --seed.
	Seed uint64
	// LogLevel and LogFormat are --log-level and --log-format.
	LogLevel, LogFormat string
	// Sources maps each flag name to where its value came from: "flag",
	// the environment variable's name, or "default".
	Sources map[string]string
}

// iterationStatsLimit is how many TensorRT-LLM iteration records are kept
// between reads of /metrics, trtllm-serve's iter_stats_max_iterations.
const iterationStatsLimit = 1000

// Load parses args (without the program name) and environ: flag, then
// environment variable (an empty one counts as unset), then default. It
// returns flag.ErrHelp for -h or --help, and otherwise an error that joins
// every problem found, one per line, each naming the flag or variable that
// gave the value and the value itself.
func Load(args []string, environ map[string]string) (Config, error) {
	if environ == nil {
		environ = map[string]string{} // env.ParseWithOptions reads os.Environ when given nil
	}
	var r raw
	if err := env.ParseWithOptions(&r, env.Options{Environment: environ}); err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	list := settings(&r)
	fs := flag.NewFlagSet("enginesim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, s := range list {
		fs.StringVar(s.value, s.flag, *s.value, s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("command line: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("command line: unexpected argument %q", fs.Arg(0))
	}
	var c Config
	c.Sources = sources(fs, list, environ)
	v := validator{sources: c.Sources}
	c.fill(&r, &v)
	return c, errors.Join(v.errs...)
}

// sources records where each setting's value came from.
func sources(fs *flag.FlagSet, list []setting, environ map[string]string) map[string]string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	out := make(map[string]string, len(list))
	for _, s := range list {
		switch {
		case set[s.flag]:
			out[s.flag] = "flag"
		case environ[s.env] != "":
			out[s.flag] = s.env
		default:
			out[s.flag] = "default"
		}
	}
	return out
}

func (c *Config) fill(r *raw, v *validator) {
	c.Listen = v.address("listen", r.Listen)
	c.Model = v.nonEmpty("model", r.Model)
	e := &c.Engine
	e.MaxNumSeqs = v.intRange("max-num-seqs", r.MaxNumSeqs, 1, maxInt)
	e.MaxNumQueuedReqs = v.intRange("max-num-queued-reqs", r.MaxNumQueuedReqs, 0, maxInt)
	e.NumGPUBlocks = v.intRange("num-gpu-blocks", r.NumGPUBlocks, 2, maxInt)
	e.BlockSize = v.intRange("block-size", r.BlockSize, 1, maxBlockSize)
	e.MaxNumBatchedTokens = v.intRange("max-num-batched-tokens", r.MaxNumBatchedTokens, 1, maxInt)
	e.DataParallelSize = v.intRange("data-parallel-size", r.DataParallelSize, 1, maxRanks)
	e.MaxModelLen = v.intRange("max-model-len", r.MaxModelLen, 2, maxInt)
	e.SpeedupRatio = v.positiveFloat("speedup-ratio", r.SpeedupRatio)
	c.checkCombinations(r, v)
	dialects := make([]string, 0, 3)
	for _, d := range sim.Dialects() {
		dialects = append(dialects, string(d))
	}
	c.Dialect = sim.Dialect(v.oneOf("metrics-dialect", r.MetricsDialect, dialects...))
	if c.Dialect == sim.DialectTRTLLM {
		e.IterationStatsLimit = iterationStatsLimit
	}
	c.Seed = v.uint64("seed", r.Seed)
	c.LogLevel = v.oneOf("log-level", r.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = v.oneOf("log-format", r.LogFormat, "json", "console")
}

// checkCombinations checks the rules between settings, each reported once
// against the setting that breaks it, and only when its inputs are valid.
func (c *Config) checkCombinations(r *raw, v *validator) {
	e := c.Engine
	if e.MaxNumSeqs > 0 && e.MaxNumBatchedTokens > 0 && e.MaxNumBatchedTokens < e.MaxNumSeqs {
		v.fail("max-num-batched-tokens", r.MaxNumBatchedTokens,
			fmt.Sprintf("must be at least %s (%d), as vLLM requires", v.name("max-num-seqs"), e.MaxNumSeqs))
	}
	if e.NumGPUBlocks > 0 && e.BlockSize > 0 && e.MaxModelLen > 0 {
		if fit := int64(e.NumGPUBlocks-1) * int64(e.BlockSize); int64(e.MaxModelLen) > fit {
			v.fail("max-model-len", r.MaxModelLen, fmt.Sprintf(
				"must fit in one rank's KV cache, (%s - 1) * %s = %d tokens", v.name("num-gpu-blocks"), v.name("block-size"), fit))
		}
	}
}

// Usage writes the --help text: every flag with its environment variable,
// default and meaning.
func Usage(w io.Writer) {
	fmt.Fprint(w, "Usage: enginesim [flags]\n\n"+
		"enginesim is a simulated LLM inference engine: an OpenAI-compatible server with vLLM's\n"+
		"scheduler, a paged KV cache and Dynamo mocker's step times, but no GPU.\n"+
		"Each flag may also be set by its environment variable; the flag wins.\n\n")
	var r raw
	list := settings(&r)
	rows := [][4]string{{"FLAG", "ENVIRONMENT", "DEFAULT", "MEANING"}}
	for _, s := range list {
		rows = append(rows, [4]string{"--" + s.flag, s.env, s.def, s.usage})
	}
	writeTable(w, rows)
}

// writeTable aligns the first three columns of rows.
func writeTable(w io.Writer, rows [][4]string) {
	var width [3]int
	for _, row := range rows {
		for i := range width {
			width[i] = max(width[i], len(row[i]))
		}
	}
	for _, row := range rows {
		line := fmt.Sprintf("%-*s  %-*s  %-*s  %s", width[0], row[0], width[1], row[1], width[2], row[2], row[3])
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}
