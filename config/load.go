package config

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// fillLoad reads the settings of the engine's load and the busy rule.
func (c *Config) fillLoad(r *raw, v *flagenv.Checker) {
	c.EngineMetricsInterval = v.Duration("engine-metrics-interval", r.EngineMetricsInterval, time.Nanosecond)
	if c.EngineMetricsInterval > 0 && c.EngineMetricsInterval < 10*time.Millisecond {
		v.Fail("engine-metrics-interval", r.EngineMetricsInterval, "must be at least 10ms")
	}
	c.EngineMetricsDialect = v.OneOf("engine-metrics-dialect", r.EngineMetricsDialect, "auto", "vllm", "sglang", "trtllm", "none")
	c.ServeEngineMetrics = serveEngineMetrics(v, r.ServeEngineMetrics, c.EngineMetricsDialect)
	const nonNeg = "must be a whole number, 0 for unset"
	c.KVTotalBlocks = v.Int64("kv-total-blocks", r.KVTotalBlocks, 0, math.MaxInt64, nonNeg)
	c.BlockSize = v.Int64("block-size", r.BlockSize, 0, 1<<20, "must be a whole number up to 1048576, 0 for unset")
	c.MaxNumBatchedTokens = v.Int64("max-num-batched-tokens", r.MaxNumBatchedTokens, 0, math.MaxInt64, nonNeg)
	c.DataParallelSize = v.Int("data-parallel-size", r.DataParallelSize, 0, 1<<16, "must be a whole number up to 65536, 0 for unset")
	c.DecodeThreshold = threshold(v, "active-decode-blocks-threshold", r.DecodeThreshold, 1, "must be a number from 0 through 1, or None")
	c.PrefillThresholdFrac = threshold(v, "active-prefill-tokens-threshold-frac", r.PrefillThresholdFrac, math.MaxFloat64,
		"must be a number of at least 0, or None")
	c.PrefillThreshold = tokenThreshold(v, "active-prefill-tokens-threshold", r.PrefillThreshold)
	c.RejectWhenBusy = v.Bool("reject-when-busy", r.RejectWhenBusy)
	c.ORCAHeader = v.Bool("orca-header", r.ORCAHeader)
	c.ORCAFormat = strings.ToLower(strings.TrimSpace(r.ORCAFormat))
	if !slices.Contains([]string{"text", "json", "bin"}, c.ORCAFormat) {
		v.Fail("orca-format", r.ORCAFormat, "must be one of text, json, bin (any case)")
	}
	c.AccessLog = v.Bool("access-log", r.AccessLog)
	c.FrontEnd = v.Bool("front-end", r.FrontEnd)
	c.EnableProfiling = v.Bool("enable-profiling", r.EnableProfiling)
	c.AdminGRPCListen = ""
	if a := strings.TrimSpace(r.AdminGRPCListen); a != "" && !strings.EqualFold(a, "off") {
		c.AdminGRPCListen = v.Address("admin-grpc-listen", r.AdminGRPCListen)
		if c.AdminGRPCListen != "" && !strings.HasSuffix(c.AdminGRPCListen, ":0") &&
			(c.AdminGRPCListen == c.Listen || c.AdminGRPCListen == c.AdminListen) {
			v.Fail("admin-grpc-listen", r.AdminGRPCListen, "must differ from "+v.Name("listen")+" and "+v.Name("admin-listen"))
		}
	}
	c.ModelName = v.NonEmpty("model-name", r.ModelName)
	c.AdmissionConfig = strings.TrimSpace(r.AdmissionConfig)
	if c.EngineMetricsDialect == "trtllm" && !c.ServeEngineMetrics && slices.Contains(c.PassthroughPaths, "/metrics") {
		v.Warn(v.Name("passthrough-paths") + " forwards /metrics to TensorRT-LLM, whose metrics drain on read: " +
			"whatever scrapes it through the proxy takes iterations from slotgate's load; scrape slotgate's admin /metrics instead")
	}
	if c.RejectWhenBusy && c.DecodeThreshold == nil && c.PrefillThreshold == nil && c.PrefillThresholdFrac == nil {
		v.Warn(v.Name("reject-when-busy") + " is set but no busy threshold is: nothing will be refused until one is set with POST /busy_threshold")
	}
}

// unset reports whether a threshold's text turns the check off: empty, or
// Dynamo's literal None.
func unset(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.EqualFold(s, "none")
}

// threshold reads a fraction threshold from 0 through hi; nil when unset.
func threshold(v *flagenv.Checker, flagName, s string, hi float64, rule string) *float64 {
	if unset(s) {
		return nil
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > hi {
		v.Fail(flagName, s, rule)
		return nil
	}
	return &x
}

// tokenThreshold reads a token count threshold; nil when unset.
func tokenThreshold(v *flagenv.Checker, flagName, s string) *uint64 {
	if unset(s) {
		return nil
	}
	n := v.Uint64(flagName, s, "must be a whole number of tokens, or None")
	return &n
}
