package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

// TestLoadSettingDefaults checks the defaults of the engine-load and busy
// settings: scrape every 200ms with auto detection, nothing static, every
// threshold off, nothing refused, no header, gRPC on :9091.
func TestLoadSettingDefaults(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{})
	eq(t, "EngineMetricsInterval", c.EngineMetricsInterval, 200*time.Millisecond)
	eq(t, "EngineMetricsDialect", c.EngineMetricsDialect, "auto")
	eq(t, "static values", [4]int64{c.KVTotalBlocks, c.BlockSize, c.MaxNumBatchedTokens, int64(c.DataParallelSize)}, [4]int64{})
	if c.DecodeThreshold != nil || c.PrefillThreshold != nil || c.PrefillThresholdFrac != nil {
		t.Errorf("thresholds = %v, %v, %v; want all off", c.DecodeThreshold, c.PrefillThreshold, c.PrefillThresholdFrac)
	}
	eq(t, "RejectWhenBusy", c.RejectWhenBusy, false)
	eq(t, "ORCAHeader", c.ORCAHeader, false)
	eq(t, "ORCAFormat", c.ORCAFormat, "text")
	eq(t, "AdminGRPCListen", c.AdminGRPCListen, ":9091")
	eq(t, "ModelName", c.ModelName, "default")
}

func TestLoadSettings(t *testing.T) {
	runValidation(t, []validationCase{
		{name: "interval", args: []string{"--engine-metrics-interval=50ms"},
			check: func(t *testing.T, c config.Config) { eq(t, "interval", c.EngineMetricsInterval, 50*time.Millisecond) }},
		{name: "interval too short", args: []string{"--engine-metrics-interval=1ms"},
			probs: []bad{{"--engine-metrics-interval", "1ms"}}},
		{name: "interval zero", env: map[string]string{"SLOTGATE_ENGINE_METRICS_INTERVAL": "0s"},
			probs: []bad{{"SLOTGATE_ENGINE_METRICS_INTERVAL", "0s"}}},
		{name: "interval not a duration", args: []string{"--engine-metrics-interval=200"},
			probs: []bad{{"--engine-metrics-interval", "200"}}},
		{name: "dialect", env: map[string]string{"SLOTGATE_ENGINE_METRICS_DIALECT": "trtllm"},
			check: func(t *testing.T, c config.Config) { eq(t, "dialect", c.EngineMetricsDialect, "trtllm") }},
		{name: "dialect unknown", args: []string{"--engine-metrics-dialect=vLLM"},
			probs: []bad{{"--engine-metrics-dialect", "vLLM"}}},
		{name: "static values", args: []string{"--kv-total-blocks=4096", "--block-size=16",
			"--max-num-batched-tokens=8192", "--data-parallel-size=4"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "static", [4]int64{c.KVTotalBlocks, c.BlockSize, c.MaxNumBatchedTokens, int64(c.DataParallelSize)},
					[4]int64{4096, 16, 8192, 4})
			}},
		{name: "static negative", args: []string{"--kv-total-blocks=-1"}, probs: []bad{{"--kv-total-blocks", "-1"}}},
		{name: "block size huge", env: map[string]string{"SLOTGATE_BLOCK_SIZE": "99999999"},
			probs: []bad{{"SLOTGATE_BLOCK_SIZE", "99999999"}}},
		{name: "dp size text", args: []string{"--data-parallel-size=two"}, probs: []bad{{"--data-parallel-size", "two"}}},
		{name: "thresholds", env: map[string]string{"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD": "0.85",
			"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD": "10000", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC": "1.5"},
			check: func(t *testing.T, c config.Config) {
				if c.DecodeThreshold == nil || *c.DecodeThreshold != 0.85 || c.PrefillThreshold == nil ||
					*c.PrefillThreshold != 10000 || c.PrefillThresholdFrac == nil || *c.PrefillThresholdFrac != 1.5 {
					t.Errorf("thresholds = %v, %v, %v", c.DecodeThreshold, c.PrefillThreshold, c.PrefillThresholdFrac)
				}
			}},
		{name: "thresholds None", env: map[string]string{"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD": "None",
			"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD": "none", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC": " "},
			check: func(t *testing.T, c config.Config) {
				if c.DecodeThreshold != nil || c.PrefillThreshold != nil || c.PrefillThresholdFrac != nil {
					t.Error("None did not turn the thresholds off")
				}
			}},
		{name: "decode threshold bounds", args: []string{"--active-decode-blocks-threshold=0", "--active-prefill-tokens-threshold-frac=0"},
			check: func(t *testing.T, c config.Config) {
				if c.DecodeThreshold == nil || *c.DecodeThreshold != 0 || c.PrefillThresholdFrac == nil {
					t.Error("0 must be accepted as a threshold")
				}
			}},
		{name: "decode threshold above 1", args: []string{"--active-decode-blocks-threshold=1.01"},
			probs: []bad{{"--active-decode-blocks-threshold", "1.01"}}},
		{name: "decode threshold NaN", env: map[string]string{"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD": "NaN"},
			probs: []bad{{"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD", "NaN"}}},
		{name: "frac negative", env: map[string]string{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC": "-0.5"},
			probs: []bad{{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC", "-0.5"}}},
		{name: "frac infinite", args: []string{"--active-prefill-tokens-threshold-frac=+Inf"},
			probs: []bad{{"--active-prefill-tokens-threshold-frac", "+Inf"}}},
		{name: "tokens fractional", args: []string{"--active-prefill-tokens-threshold=1.5"},
			probs: []bad{{"--active-prefill-tokens-threshold", "1.5"}}},
		{name: "tokens negative", env: map[string]string{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD": "-1"},
			probs: []bad{{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD", "-1"}}},
		{name: "flags", args: []string{"--reject-when-busy", "--orca-header", "--active-prefill-tokens-threshold=1"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "RejectWhenBusy", c.RejectWhenBusy, true)
				eq(t, "ORCAHeader", c.ORCAHeader, true)
			}},
		{name: "access log and profiling by default", check: func(t *testing.T, c config.Config) {
			eq(t, "AccessLog", c.AccessLog, true)
			eq(t, "EnableProfiling", c.EnableProfiling, false)
		}},
		{name: "access log off, profiling on", args: []string{"--access-log=false", "--enable-profiling"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "AccessLog", c.AccessLog, false)
				eq(t, "EnableProfiling", c.EnableProfiling, true)
			}},
		{name: "the front end by default, off by variable", env: map[string]string{"SLOTGATE_FRONT_END": "false"},
			check: func(t *testing.T, c config.Config) { eq(t, "FrontEnd", c.FrontEnd, false) }},
		{name: "the front end on", args: []string{"--front-end"},
			check: func(t *testing.T, c config.Config) { eq(t, "FrontEnd", c.FrontEnd, true) }},
		{name: "access log by variable", env: map[string]string{"SLOTGATE_ACCESS_LOG": "false"},
			check: func(t *testing.T, c config.Config) { eq(t, "AccessLog", c.AccessLog, false) }},
		// Switches take Dynamo's words too: 1/true/on/yes, 0/false/off/no.
		{name: "access log off", env: map[string]string{"SLOTGATE_ACCESS_LOG": "off"},
			check: func(t *testing.T, c config.Config) { eq(t, "AccessLog", c.AccessLog, false) }},
		{name: "orca header yes", env: map[string]string{"SLOTGATE_ORCA_HEADER": "yes"},
			check: func(t *testing.T, c config.Config) { eq(t, "ORCAHeader", c.ORCAHeader, true) }},
		{name: "orca format BIN", env: map[string]string{"SLOTGATE_ORCA_FORMAT": " BIN"},
			check: func(t *testing.T, c config.Config) { eq(t, "ORCAFormat", c.ORCAFormat, "bin") }},
		{name: "orca format json", args: []string{"--orca-format=json"},
			check: func(t *testing.T, c config.Config) { eq(t, "ORCAFormat", c.ORCAFormat, "json") }},
		{name: "orca format bad", args: []string{"--orca-format=proto"}, probs: []bad{{"--orca-format", "proto"}}},
		{name: "profiling ON", args: []string{"--enable-profiling=ON"},
			check: func(t *testing.T, c config.Config) { eq(t, "EnableProfiling", c.EnableProfiling, true) }},
		{name: "access log not a bool", env: map[string]string{"SLOTGATE_ACCESS_LOG": "disabled"},
			probs: []bad{{"SLOTGATE_ACCESS_LOG", "disabled"}}},
		{name: "bool not a bool", env: map[string]string{"SLOTGATE_ORCA_HEADER": "y"},
			probs: []bad{{"SLOTGATE_ORCA_HEADER", "y"}}},
		{name: "grpc off", env: map[string]string{"SLOTGATE_ADMIN_GRPC_LISTEN": "off"},
			check: func(t *testing.T, c config.Config) { eq(t, "AdminGRPCListen", c.AdminGRPCListen, "") }},
		{name: "grpc OFF", args: []string{"--admin-grpc-listen=OFF"},
			check: func(t *testing.T, c config.Config) { eq(t, "AdminGRPCListen", c.AdminGRPCListen, "") }},
		{name: "grpc off by empty flag", args: []string{"--admin-grpc-listen="},
			check: func(t *testing.T, c config.Config) { eq(t, "AdminGRPCListen", c.AdminGRPCListen, "") }},
		{name: "grpc equals admin", args: []string{"--admin-grpc-listen=:9090"},
			probs: []bad{{"--admin-grpc-listen", ":9090"}}},
		{name: "grpc equals listen", args: []string{"--listen=:7000", "--admin-grpc-listen=:7000"},
			probs: []bad{{"--admin-grpc-listen", ":7000"}}},
		{name: "grpc port 0 twice", args: []string{"--admin-listen=:0", "--admin-grpc-listen=:0"}},
		{name: "grpc bad", args: []string{"--admin-grpc-listen=9091"}, probs: []bad{{"--admin-grpc-listen", "9091"}}},
		{name: "model name empty", args: []string{"--model-name= "}, probs: []bad{{"--model-name", " "}}},
	})
}

// TestRejectWhenBusyWithoutThresholdWarns: refusing while busy with no
// threshold set refuses nothing, which deserves a word at start-up.
func TestRejectWhenBusyWithoutThresholdWarns(t *testing.T) {
	c := mustLoad(t, []string{"--reject-when-busy"}, map[string]string{})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "--reject-when-busy") {
		t.Errorf("Warnings = %q, want one naming --reject-when-busy", c.Warnings)
	}
}

// TestTRTLLMMetricsPassthroughWarns: TensorRT-LLM's /metrics drains on
// read, so forwarding it through the proxy steals slotgate's figures;
// served from slotgate's own scrape (the default), it is not forwarded.
func TestTRTLLMMetricsPassthroughWarns(t *testing.T) {
	c := mustLoad(t, []string{"--engine-metrics-dialect=trtllm", "--serve-engine-metrics=false"}, map[string]string{})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "drain") {
		t.Errorf("Warnings = %q, want one about /metrics draining", c.Warnings)
	}
	for _, args := range [][]string{
		{"--engine-metrics-dialect=trtllm", "--serve-engine-metrics=false", "--passthrough-paths=/health"},
		{"--engine-metrics-dialect=trtllm"},
	} {
		if c := mustLoad(t, args, map[string]string{}); len(c.Warnings) != 0 {
			t.Errorf("%q: Warnings = %q without /metrics passed through, want none", args, c.Warnings)
		}
	}
}
