package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/sim"
)

// Config is enginesim's validated configuration. Each field names its flag;
// the environment variables and defaults are in settings.go.
type Config struct {
	// Listen is the API address (--listen).
	Listen string
	// GRPCListen is the gRPC API's address (--grpc-listen); "" (unset or
	// off) is none.
	GRPCListen string
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
	// Faults holds --fault-reset-rate, --fault-error-rate,
	// --fault-stall-rate, --fault-stall, --fault-slow-first-token-rate,
	// --fault-slow-first-token and --fault-never-end-rate.
	Faults sim.FaultSet
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
	var r raw
	sources, err := flagenv.Parse(flag.NewFlagSet("enginesim", flag.ContinueOnError), &r, args, environ)
	if err != nil {
		return Config{}, err
	}
	c := Config{Sources: sources}
	v := flagenv.NewChecker(sources)
	c.fill(&r, v)
	return c, v.Err()
}

func (c *Config) fill(r *raw, v *flagenv.Checker) {
	c.Listen = v.Address("listen", r.Listen)
	c.fillGRPCListen(r, v)
	c.Model = v.NonEmpty("model", r.Model)
	e := &c.Engine
	e.MaxNumSeqs = intRange(v, "max-num-seqs", r.MaxNumSeqs, 1, maxInt)
	e.MaxNumQueuedReqs = intRange(v, "max-num-queued-reqs", r.MaxNumQueuedReqs, 0, maxInt)
	e.NumGPUBlocks = intRange(v, "num-gpu-blocks", r.NumGPUBlocks, 2, maxInt)
	e.BlockSize = intRange(v, "block-size", r.BlockSize, 1, maxBlockSize)
	e.MaxNumBatchedTokens = intRange(v, "max-num-batched-tokens", r.MaxNumBatchedTokens, 1, maxInt)
	e.DataParallelSize = intRange(v, "data-parallel-size", r.DataParallelSize, 1, maxRanks)
	e.MaxModelLen = intRange(v, "max-model-len", r.MaxModelLen, 2, maxInt)
	e.SpeedupRatio = positiveFloat(v, "speedup-ratio", r.SpeedupRatio)
	c.checkCombinations(r, v)
	dialects := make([]string, 0, 3)
	for _, d := range sim.Dialects() {
		dialects = append(dialects, string(d))
	}
	c.Dialect = sim.Dialect(v.OneOf("metrics-dialect", r.MetricsDialect, dialects...))
	if c.Dialect == sim.DialectTRTLLM {
		e.IterationStatsLimit = iterationStatsLimit
	}
	c.Seed = seed(v, "seed", r.Seed)
	c.fillFaults(r, v)
	c.LogLevel = v.OneOf("log-level", r.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = v.OneOf("log-format", r.LogFormat, "json", "console")
}

// fillFaults reads the fault settings.
func (c *Config) fillFaults(r *raw, v *flagenv.Checker) {
	f := &c.Faults
	f.ResetRate = rate(v, "fault-reset-rate", r.FaultResetRate)
	f.ErrorRate = rate(v, "fault-error-rate", r.FaultErrorRate)
	f.StallRate = rate(v, "fault-stall-rate", r.FaultStallRate)
	f.Stall = v.Duration("fault-stall", r.FaultStall, 0)
	f.SlowFirstTokenRate = rate(v, "fault-slow-first-token-rate", r.FaultSlowFirstTokenRate)
	f.SlowFirstToken = v.Duration("fault-slow-first-token", r.FaultSlowFirstToken, 0)
	f.NeverEndRate = rate(v, "fault-never-end-rate", r.FaultNeverEndRate)
}

// fillGRPCListen reads --grpc-listen: empty or off is none; an address
// must differ from --listen, unless both pick a free port.
func (c *Config) fillGRPCListen(r *raw, v *flagenv.Checker) {
	a := strings.TrimSpace(r.GRPCListen)
	if a == "" || strings.EqualFold(a, "off") {
		return
	}
	c.GRPCListen = v.Address("grpc-listen", r.GRPCListen)
	if c.GRPCListen != "" && c.GRPCListen == c.Listen && !strings.HasSuffix(c.GRPCListen, ":0") {
		v.Fail("grpc-listen", r.GRPCListen, "must differ from "+v.Name("listen"))
	}
}

// checkCombinations checks the rules between settings, each reported once
// against the setting that breaks it, and only when its inputs are valid.
func (c *Config) checkCombinations(r *raw, v *flagenv.Checker) {
	e := c.Engine
	if e.MaxNumSeqs > 0 && e.MaxNumBatchedTokens > 0 && e.MaxNumBatchedTokens < e.MaxNumSeqs {
		v.Fail("max-num-batched-tokens", r.MaxNumBatchedTokens,
			fmt.Sprintf("must be at least %s (%d), as vLLM requires", v.Name("max-num-seqs"), e.MaxNumSeqs))
	}
	if e.NumGPUBlocks > 0 && e.BlockSize > 0 && e.MaxModelLen > 0 {
		if fit := int64(e.NumGPUBlocks-1) * int64(e.BlockSize); int64(e.MaxModelLen) > fit {
			v.Fail("max-model-len", r.MaxModelLen, fmt.Sprintf(
				"must fit in one rank's KV cache, (%s - 1) * %s = %d tokens", v.Name("num-gpu-blocks"), v.Name("block-size"), fit))
		}
	}
}

// Usage writes the --help text: every flag with its environment variable,
// default and meaning.
func Usage(w io.Writer) {
	var r raw
	// A failed write of --help leaves nothing better to do than exit.
	_ = flagenv.WriteUsage(w, usageIntro, flagenv.MustSettings(&r))
}

// usageIntro opens the --help text.
const usageIntro = "Usage: enginesim [flags]\n\n" +
	"enginesim is a simulated LLM inference engine: an OpenAI-compatible server with vLLM's\n" +
	"scheduler, a paged KV cache and Dynamo mocker's step times, but no GPU. With\n" +
	"--grpc-listen it also serves vLLM's gRPC Generate, on the same engine.\n" +
	"GET " + sim.OwnMetricsPath + " serves its own gauges in every metrics dialect, among them\n" +
	sim.MetricBeforeFirstTokenMax + ": the most requests before their first\n" +
	"output token at once since start, and " + sim.MetricInFlightMax + ": the most\n" +
	"generation requests in flight at once.\n" +
	"The --fault-* settings inject faults into generation requests, for chaos tests: each\n" +
	"request draws at most one, from --seed. GET " + sim.FaultsPath + " shows them and\n" +
	"PUT " + sim.FaultsPath + " replaces them at run time, as JSON.\n" +
	"Each flag may also be set by its environment variable; the flag wins.\n\n"
