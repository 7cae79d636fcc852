package main

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/sim"
)

func TestLoadDefaults(t *testing.T) {
	c, err := Load(nil, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		Listen: "127.0.0.1:8000", Model: "sim-model", Dialect: sim.DialectVLLM, LogLevel: "info", LogFormat: "json",
		Engine: sim.Options{
			MaxNumSeqs: 256, NumGPUBlocks: 16384, BlockSize: 16, MaxNumBatchedTokens: 8192,
			DataParallelSize: 1, MaxModelLen: 8192, SpeedupRatio: 1,
		},
		Faults: sim.FaultSet{Stall: 2 * time.Second, SlowFirstToken: 2 * time.Second},
	}
	for flagName, src := range c.Sources {
		if src != "default" {
			t.Errorf("source of --%s = %q with no flag or variable set", flagName, src)
		}
	}
	c.Sources = nil
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	// The documented defaults are the engine's own.
	e, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Options() != want.Engine {
		t.Errorf("sim defaults %+v differ from the flags' %+v", e.Options(), want.Engine)
	}
	if sim.DefaultFaultSet() != want.Faults {
		t.Errorf("sim's default fault set %+v differs from the flags' %+v", sim.DefaultFaultSet(), want.Faults)
	}
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		flag   string // whose source is checked
		get    func(Config) any
		want   any
		source string
	}{
		{"default", nil, nil, "max-num-seqs", func(c Config) any { return c.Engine.MaxNumSeqs }, 256, "default"},
		{"environment", nil, map[string]string{"ENGINESIM_MAX_NUM_SEQS": "10"},
			"max-num-seqs", func(c Config) any { return c.Engine.MaxNumSeqs }, 10, "ENGINESIM_MAX_NUM_SEQS"},
		{"flag over environment", []string{"--max-num-seqs", "12"}, map[string]string{"ENGINESIM_MAX_NUM_SEQS": "10"},
			"max-num-seqs", func(c Config) any { return c.Engine.MaxNumSeqs }, 12, "flag"},
		{"empty variable is unset", nil, map[string]string{"ENGINESIM_MODEL": ""},
			"model", func(c Config) any { return c.Model }, "sim-model", "default"},
		{"float", []string{"--speedup-ratio=100"}, nil,
			"speedup-ratio", func(c Config) any { return c.Engine.SpeedupRatio }, 100.0, "flag"},
		{"seed", nil, map[string]string{"ENGINESIM_SEED": "18446744073709551615"},
			"seed", func(c Config) any { return c.Seed }, uint64(18446744073709551615), "ENGINESIM_SEED"},
		{"single dash", []string{"-max-num-queued-reqs", "32"}, nil,
			"max-num-queued-reqs", func(c Config) any { return c.Engine.MaxNumQueuedReqs }, 32, "flag"},
		{"no gRPC port by default", nil, nil, "grpc-listen", func(c Config) any { return c.GRPCListen }, "", "default"},
		{"gRPC port from the environment", nil, map[string]string{"ENGINESIM_GRPC_LISTEN": ":50051"},
			"grpc-listen", func(c Config) any { return c.GRPCListen }, ":50051", "ENGINESIM_GRPC_LISTEN"},
		{"gRPC port off", []string{"--grpc-listen", "off"}, map[string]string{"ENGINESIM_GRPC_LISTEN": ":50051"},
			"grpc-listen", func(c Config) any { return c.GRPCListen }, "", "flag"},
		{"both ports picked by the kernel", []string{"--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"}, nil,
			"grpc-listen", func(c Config) any { return c.GRPCListen }, "127.0.0.1:0", "flag"},
		{"trtllm keeps iteration stats", []string{"--metrics-dialect", "trtllm"}, nil,
			"metrics-dialect", func(c Config) any { return c.Engine.IterationStatsLimit }, 1000, "flag"},
		{"other dialects keep none", nil, map[string]string{"ENGINESIM_METRICS_DIALECT": "sglang"},
			"metrics-dialect", func(c Config) any { return c.Engine.IterationStatsLimit }, 0, "ENGINESIM_METRICS_DIALECT"},
		{"reset rate", []string{"--fault-reset-rate", "0.01"}, nil,
			"fault-reset-rate", func(c Config) any { return c.Faults.ResetRate }, 0.01, "flag"},
		{"error rate from the environment", nil, map[string]string{"ENGINESIM_FAULT_ERROR_RATE": "1"},
			"fault-error-rate", func(c Config) any { return c.Faults.ErrorRate }, 1.0, "ENGINESIM_FAULT_ERROR_RATE"},
		{"stall rate", []string{"--fault-stall-rate=0.5"}, map[string]string{"ENGINESIM_FAULT_STALL_RATE": "0.2"},
			"fault-stall-rate", func(c Config) any { return c.Faults.StallRate }, 0.5, "flag"},
		{"stall", nil, map[string]string{"ENGINESIM_FAULT_STALL": "150ms"},
			"fault-stall", func(c Config) any { return c.Faults.Stall }, 150 * time.Millisecond, "ENGINESIM_FAULT_STALL"},
		{"slow first token rate", []string{"--fault-slow-first-token-rate", "0"}, nil,
			"fault-slow-first-token-rate", func(c Config) any { return c.Faults.SlowFirstTokenRate }, 0.0, "flag"},
		{"slow first token", []string{"--fault-slow-first-token", "1m"}, nil,
			"fault-slow-first-token", func(c Config) any { return c.Faults.SlowFirstToken }, time.Minute, "flag"},
		{"never end rate", nil, map[string]string{"ENGINESIM_FAULT_NEVER_END_RATE": "0.001"},
			"fault-never-end-rate", func(c Config) any { return c.Faults.NeverEndRate }, 0.001, "ENGINESIM_FAULT_NEVER_END_RATE"},
		{"zero stall", []string{"--fault-stall", "0s"}, nil,
			"fault-stall", func(c Config) any { return c.Faults.Stall }, time.Duration(0), "flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.get(c); got != tt.want {
				t.Errorf("got %v (%T), want %v (%T)", got, got, tt.want, tt.want)
			}
			if got := c.Sources[tt.flag]; got != tt.source {
				t.Errorf("source of --%s = %q, want %q", tt.flag, got, tt.source)
			}
		})
	}
}

// Every problem is reported, one line each, naming the flag or variable
// that gave the value and the value.
func TestLoadProblems(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"zero sequences", []string{"--max-num-seqs", "0"}, nil,
			[]string{`--max-num-seqs: must be an integer from 1 through 2147483647, got "0"`}},
		{"speedup from the environment", nil, map[string]string{"ENGINESIM_SPEEDUP_RATIO": "0"},
			[]string{`ENGINESIM_SPEEDUP_RATIO: must be a positive number such as 1, 0.5 or 100, got "0"`}},
		{"speedup not a number", []string{"--speedup-ratio", "fast"}, nil,
			[]string{`--speedup-ratio: must be a positive number such as 1, 0.5 or 100, got "fast"`}},
		{"infinite speedup", []string{"--speedup-ratio", "+Inf"}, nil,
			[]string{`--speedup-ratio: must be a positive number such as 1, 0.5 or 100, got "+Inf"`}},
		{"dialect", []string{"--metrics-dialect", "xml"}, nil,
			[]string{`--metrics-dialect: must be one of vllm, sglang, trtllm, got "xml"`}},
		{"listen", []string{"--listen", "8000"}, nil, []string{`--listen: must be host:port or :port, got "8000"`}},
		{"port", []string{"--listen", ":99999"}, nil, []string{`--listen: must have a port from 0 through 65535, got ":99999"`}},
		{"gRPC address", []string{"--grpc-listen", "50051"}, nil, []string{`--grpc-listen: must be host:port or :port, got "50051"`}},
		{"gRPC on the API port", nil, map[string]string{"ENGINESIM_GRPC_LISTEN": "127.0.0.1:8000"},
			[]string{`ENGINESIM_GRPC_LISTEN: must differ from --listen (default), got "127.0.0.1:8000"`}},
		{"negative queue", []string{"--max-num-queued-reqs", "-1"}, nil,
			[]string{`--max-num-queued-reqs: must be an integer from 0 through 2147483647, got "-1"`}},
		{"one block", []string{"--num-gpu-blocks", "1"}, nil,
			[]string{`--num-gpu-blocks: must be an integer from 2 through 2147483647, got "1"`}},
		{"no ranks", nil, map[string]string{"ENGINESIM_DATA_PARALLEL_SIZE": "0"},
			[]string{`ENGINESIM_DATA_PARALLEL_SIZE: must be an integer from 1 through 1024, got "0"`}},
		{"budget below sequences", []string{"--max-num-batched-tokens", "100"}, nil,
			[]string{`--max-num-batched-tokens: must be at least --max-num-seqs (default) (256), as vLLM requires, got "100"`}},
		{"model longer than the cache", []string{"--num-gpu-blocks", "10"}, nil,
			[]string{`--max-model-len (default): must fit in one rank's KV cache, (--num-gpu-blocks - 1) * --block-size (default) = 144 tokens, got "8192"`}},
		{"negative seed", []string{"--seed", "-1"}, nil,
			[]string{`--seed: must be an integer from 0 through 18446744073709551615, got "-1"`}},
		{"empty model", []string{"--model", " "}, nil, []string{`--model: must not be empty, got " "`}},
		{"log level", []string{"--log-level", "loud"}, nil, []string{`--log-level: must be one of debug, info, warn, error, got "loud"`}},
		{"reset rate above 1", []string{"--fault-reset-rate", "1.5"}, nil,
			[]string{`--fault-reset-rate: must be a number from 0 through 1, got "1.5"`}},
		{"negative error rate", nil, map[string]string{"ENGINESIM_FAULT_ERROR_RATE": "-0.1"},
			[]string{`ENGINESIM_FAULT_ERROR_RATE: must be a number from 0 through 1, got "-0.1"`}},
		{"stall rate not a number", []string{"--fault-stall-rate", "often"}, nil,
			[]string{`--fault-stall-rate: must be a number from 0 through 1, got "often"`}},
		{"NaN rate", []string{"--fault-slow-first-token-rate", "NaN"}, nil,
			[]string{`--fault-slow-first-token-rate: must be a number from 0 through 1, got "NaN"`}},
		{"never end rate as a percentage", []string{"--fault-never-end-rate", "5%"}, nil,
			[]string{`--fault-never-end-rate: must be a number from 0 through 1, got "5%"`}},
		{"stall not a duration", []string{"--fault-stall", "2"}, nil,
			[]string{`--fault-stall: must be a duration such as 500ms, 5s or 2m, got "2"`}},
		{"negative slow first token", nil, map[string]string{"ENGINESIM_FAULT_SLOW_FIRST_TOKEN": "-1s"},
			[]string{`ENGINESIM_FAULT_SLOW_FIRST_TOKEN: must not be negative, got "-1s"`}},
		{"every problem at once", []string{"--block-size", "0", "--log-format", "xml"},
			map[string]string{"ENGINESIM_MAX_MODEL_LEN": "1"}, []string{
				`--block-size: must be an integer from 1 through 65536, got "0"`,
				`ENGINESIM_MAX_MODEL_LEN: must be an integer from 2 through 2147483647, got "1"`,
				`--log-format: must be one of json, console, got "xml"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, tt.env)
			if err == nil {
				t.Fatal("Load accepted the configuration")
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLoadCommandLine(t *testing.T) {
	if _, err := Load([]string{"--help"}, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
	if _, err := Load([]string{"--bogus"}, nil); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("--bogus: %v", err)
	}
	if _, err := Load([]string{"serve"}, nil); err == nil || !strings.Contains(err.Error(), `unexpected argument "serve"`) {
		t.Errorf("a positional argument: %v", err)
	}
}

func TestUsageDocumentsEverySetting(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	out := b.String()
	var r raw
	for _, s := range settings(&r) {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "--"+s.flag+" ") {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, s.env) || !strings.Contains(line, " "+s.def+" ") || s.usage == "" {
			t.Errorf("--help has no line for --%s with %s and default %q:\n%s", s.flag, s.env, s.def, out)
		}
		if !strings.HasPrefix(s.env, "ENGINESIM_") {
			t.Errorf("--%s reads %s, want an ENGINESIM_ variable", s.flag, s.env)
		}
	}
}
