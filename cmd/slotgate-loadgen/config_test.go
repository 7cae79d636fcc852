package main

import (
	"bytes"
	"errors"
	"flag"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// allSettings is every setting, in --help order, with its variable and
// the default --help shows.
var allSettings = []struct{ flag, env, def string }{
	{"mode", "LOADGEN_MODE", "closed"},
	{"concurrency", "LOADGEN_CONCURRENCY", "8"},
	{"rate", "LOADGEN_RATE", "(unset)"},
	{"max-outstanding", "LOADGEN_MAX_OUTSTANDING", "10000"},
	{"seed", "LOADGEN_SEED", "1"},
	{"requests", "LOADGEN_REQUESTS", "(unset)"},
	{"duration", "LOADGEN_DURATION", "(unset)"},
	{"drain-timeout", "LOADGEN_DRAIN_TIMEOUT", "30s"},
	{"url", "LOADGEN_URL", "http://127.0.0.1:8080"},
	{"grpc", "LOADGEN_GRPC", "false"},
	{"endpoint", "LOADGEN_ENDPOINT", "/v1/completions"},
	{"model", "LOADGEN_MODEL", "sim-model"},
	{"stream", "LOADGEN_STREAM", "true"},
	{"prompt-tokens", "LOADGEN_PROMPT_TOKENS", "128"},
	{"max-tokens", "LOADGEN_MAX_TOKENS", "64"},
	{"timeout", "LOADGEN_TIMEOUT", "5m"},
	{"retry", "LOADGEN_RETRY", "1"},
	{"deadline", "LOADGEN_DEADLINE", "(unset)"},
	{"api-key", "LOADGEN_API_KEY", "(unset)"},
	{"json", "LOADGEN_JSON", "(unset)"},
	{"progress-interval", "LOADGEN_PROGRESS_INTERVAL", "2s"},
}

func mustLoad(t *testing.T, args []string, env map[string]string) config {
	t.Helper()
	c, err := load(args, env)
	if err != nil {
		t.Fatalf("load(%q, %v): %v", args, env, err)
	}
	return c
}

// TestDefaults: with only a bound given, every other setting is its
// default, whether its variable is missing or empty.
func TestDefaults(t *testing.T) {
	empty := map[string]string{}
	for _, s := range allSettings {
		empty[s.env] = ""
	}
	for name, env := range map[string]map[string]string{"no variables": nil, "empty variables": empty} {
		t.Run(name, func(t *testing.T) {
			c := mustLoad(t, []string{"--requests", "5"}, env)
			o := c.opts
			want := loadgen.Options{
				Mode: loadgen.Closed, Concurrency: 8, Seed: 1, Requests: 5, DrainTimeout: 30 * time.Second,
				URL: "http://127.0.0.1:8080", Endpoint: loadgen.EndpointCompletions, Model: "sim-model", Stream: true,
				PromptTokens: loadgen.FixedDist(128), MaxTokens: loadgen.FixedDist(64),
				Timeout: 5 * time.Minute, Retry: 1, ProgressInterval: 2 * time.Second,
			}
			if o != want {
				t.Errorf("options = %+v\nwant      %+v", o, want)
			}
			if c.jsonPath != "" || c.showVersion {
				t.Errorf("jsonPath = %q, showVersion = %v", c.jsonPath, c.showVersion)
			}
			if got := slices.Sorted(maps.Keys(c.sources)); len(got) != len(allSettings) {
				t.Errorf("sources cover %q, want every setting", got)
			}
		})
	}
}

// TestPrecedence: a flag beats its variable, which beats the default, and
// sources says which gave each value.
func TestPrecedence(t *testing.T) {
	for _, tc := range []struct {
		flag, env        string
		envVal, flagVal  string
		get              func(config) string
		def, fromEnv, fl string
	}{
		{"concurrency", "LOADGEN_CONCURRENCY", "3", "5", func(c config) string { return strconv.Itoa(c.opts.Concurrency) }, "8", "3", "5"},
		{"seed", "LOADGEN_SEED", "9", "18446744073709551615", func(c config) string { return strconv.FormatUint(c.opts.Seed, 10) }, "1", "9", "18446744073709551615"},
		{"duration", "LOADGEN_DURATION", "1m", "250ms", func(c config) string { return c.opts.Duration.String() }, "0s", "1m0s", "250ms"},
		{"url", "LOADGEN_URL", "http://e:1", "https://f/p", func(c config) string { return c.opts.URL }, "http://127.0.0.1:8080", "http://e:1", "https://f/p"},
		{"endpoint", "LOADGEN_ENDPOINT", "/v1/chat/completions", "/v1/completions", func(c config) string { return c.opts.Endpoint }, "/v1/completions", "/v1/chat/completions", "/v1/completions"},
		{"stream", "LOADGEN_STREAM", "false", "true", func(c config) string { return strconv.FormatBool(c.opts.Stream) }, "true", "false", "true"},
		{"max-tokens", "LOADGEN_MAX_TOKENS", "uniform:16:128", "normal:300:50", func(c config) string { return c.opts.MaxTokens.String() }, "64", "uniform:16:128", "normal:300:50"},
		{"timeout", "LOADGEN_TIMEOUT", "0", "10s", func(c config) string { return c.opts.Timeout.String() }, "5m0s", "0s", "10s"},
		{"json", "LOADGEN_JSON", "/tmp/x.json", "-", func(c config) string { return c.jsonPath }, "", "/tmp/x.json", "-"},
		{"api-key", "LOADGEN_API_KEY", "k1", "k2", func(c config) string { return c.opts.APIKey }, "", "k1", "k2"},
		{"retry", "LOADGEN_RETRY", "3", "100", func(c config) string { return strconv.Itoa(c.opts.Retry) }, "1", "3", "100"},
		{"deadline", "LOADGEN_DEADLINE", "10s", "0", func(c config) string { return c.opts.Deadline.String() }, "0s", "10s", "0s"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			base := []string{"--requests", "1"}
			if tc.flag == "duration" {
				base = nil
			}
			if tc.flag != "duration" {
				if got := tc.get(mustLoad(t, base, nil)); got != tc.def {
					t.Errorf("default = %q, want %q", got, tc.def)
				}
			}
			env := map[string]string{tc.env: tc.envVal}
			c := mustLoad(t, base, env)
			if got := tc.get(c); got != tc.fromEnv || c.sources[tc.flag] != tc.env {
				t.Errorf("from %s: %q (source %q), want %q", tc.env, got, c.sources[tc.flag], tc.fromEnv)
			}
			c = mustLoad(t, append(base, "--"+tc.flag+"="+tc.flagVal), env)
			if got := tc.get(c); got != tc.fl || c.sources[tc.flag] != "flag" {
				t.Errorf("from the flag: %q (source %q), want %q", got, c.sources[tc.flag], tc.fl)
			}
		})
	}
}

// TestStreamFlag: --stream is a boolean flag.
func TestStreamFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--stream"}, true},
		{[]string{"--stream=false"}, false},
		{[]string{"--stream=0"}, false},
		{[]string{"-stream=true"}, true},
	} {
		c := mustLoad(t, append([]string{"--requests=1"}, tc.args...), map[string]string{"LOADGEN_STREAM": "false"})
		if c.opts.Stream != tc.want {
			t.Errorf("%q: stream = %v, want %v", tc.args, c.opts.Stream, tc.want)
		}
	}
}

// TestOpenMode reads the open loop's settings.
func TestOpenMode(t *testing.T) {
	c := mustLoad(t, []string{"--mode", "open", "--rate", "12.5", "--duration", "1m"}, map[string]string{"LOADGEN_MAX_OUTSTANDING": "7"})
	if o := c.opts; o.Mode != loadgen.Open || o.Rate != 12.5 || o.MaxOutstanding != 7 || o.Concurrency != 0 {
		t.Errorf("options = %+v", o)
	}
}

// bad is one expected problem: who gave the value and the value.
type bad struct{ who, value string }

// TestProblems: each bad value is one line naming its flag or variable and
// quoting the value, and every problem is reported.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want []bad
	}{
		{"no bound", nil, nil, []bad{{"--requests (default)", ""}}},
		{"zero concurrency", []string{"--requests=1", "--concurrency=0"}, nil, []bad{{"--concurrency", "0"}}},
		{"concurrency from env", []string{"--requests=1"}, map[string]string{"LOADGEN_CONCURRENCY": "lots"}, []bad{{"LOADGEN_CONCURRENCY", "lots"}}},
		{"mode", []string{"--requests=1", "--mode=half"}, nil, []bad{{"--mode", "half"}}},
		{"open without rate", []string{"--requests=1", "--mode=open"}, nil, []bad{{"--rate (default)", ""}}},
		{"open rate zero, outstanding zero", []string{"--requests=1", "--mode=open", "--rate=0", "--max-outstanding=0"}, nil,
			[]bad{{"--rate", "0"}, {"--max-outstanding", "0"}}},
		{"rate without open", []string{"--requests=1", "--rate=5"}, nil, []bad{{"--rate", "5"}}},
		{"concurrency with open", []string{"--requests=1", "--mode=open", "--rate=5", "--concurrency=4"}, nil, []bad{{"--concurrency", "4"}}},
		{"seed", []string{"--requests=1", "--seed=-1"}, nil, []bad{{"--seed", "-1"}}},
		{"requests and duration", []string{"--requests=0", "--duration=0s"}, nil, []bad{{"--requests", "0"}, {"--duration", "0s"}}},
		{"durations", []string{"--requests=1", "--drain-timeout=-1s", "--timeout=soon", "--progress-interval=1ms"}, nil,
			[]bad{{"--drain-timeout", "-1s"}, {"--timeout", "soon"}, {"--progress-interval", "1ms"}}},
		{"retry and deadline", []string{"--requests=1", "--retry=0", "--deadline=-1s"}, nil,
			[]bad{{"--retry", "0"}, {"--deadline", "-1s"}}},
		{"retry above the bound, deadline from env", []string{"--requests=1", "--retry=101"},
			map[string]string{"LOADGEN_DEADLINE": "soon"}, []bad{{"--retry", "101"}, {"LOADGEN_DEADLINE", "soon"}}},
		{"url", []string{"--requests=1", "--url=127.0.0.1:8080"}, nil, []bad{{"--url", "127.0.0.1:8080"}}},
		{"url with query", []string{"--requests=1"}, map[string]string{"LOADGEN_URL": "http://h/?x=1"}, []bad{{"LOADGEN_URL", "http://h/?x=1"}}},
		{"endpoint and model", []string{"--requests=1", "--endpoint=/v1/embeddings", "--model= "}, nil,
			[]bad{{"--endpoint", "/v1/embeddings"}, {"--model", " "}}},
		{"stream", []string{"--requests=1"}, map[string]string{"LOADGEN_STREAM": "sometimes"}, []bad{{"LOADGEN_STREAM", "sometimes"}}},
		{"distributions", []string{"--requests=1", "--prompt-tokens=uniform:9:1", "--max-tokens=0"}, nil,
			[]bad{{"--prompt-tokens", "uniform:9:1"}, {"--max-tokens", "0"}}},
		{"grpc", []string{"--requests=1", "--grpc=maybe"}, nil, []bad{{"--grpc", "maybe"}}},
		{"grpc url", []string{"--requests=1", "--grpc", "--url=127.0.0.1:50051"}, nil, []bad{{"--url", "127.0.0.1:50051"}}},
		{"grpc https", []string{"--requests=1"}, map[string]string{"LOADGEN_GRPC": "1", "LOADGEN_URL": "https://h:1"},
			[]bad{{"LOADGEN_URL", "https://h:1"}}},
		{"grpc with http settings", []string{"--requests=1", "--grpc", "--endpoint=/v1/completions", "--model=m"},
			map[string]string{"LOADGEN_API_KEY": "k"},
			[]bad{{"--endpoint", "/v1/completions"}, {"--model", "m"}, {"LOADGEN_API_KEY", "k"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.args, tc.env)
			checkProblems(t, err, tc.want)
		})
	}
}

func checkProblems(t *testing.T, err error, want []bad) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", want)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d problem line(s), want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w.who+": ") || !strings.HasSuffix(lines[i], "got "+strconv.Quote(w.value)) {
			t.Errorf("line %d = %q, want it to name %s and end with got %q", i, lines[i], w.who, w.value)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	if _, err := load([]string{"--help"}, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"--requests=1", "extra"}} {
		if _, err := load(args, nil); err == nil || errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: error %v", args, err)
		}
	}
}

// TestUsage: --help lists every flag with its variable and default.
func TestUsage(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	rows := map[string][]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "--") {
			rows[strings.TrimPrefix(f[0], "--")] = f
		}
	}
	for _, s := range allSettings {
		f := rows[s.flag]
		if len(f) < 4 || f[1] != s.env || f[2] != s.def {
			t.Errorf("--%s row = %q, want %s, default %s and a meaning", s.flag, f, s.env, s.def)
		}
		delete(rows, s.flag)
	}
	delete(rows, "version")
	if len(rows) != 0 {
		t.Errorf("usage lists flags the tests do not know: %v", slices.Sorted(maps.Keys(rows)))
	}
}

// TestGRPC: --grpc takes --url as a gRPC server's, the default one
// included (slotgate's proxy port takes gRPC too), and leaves the HTTP
// settings empty for loadgen.
func TestGRPC(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--grpc"}, nil, "http://127.0.0.1:8080"},
		{[]string{"--grpc", "--url", "http://127.0.0.1:50051/"}, nil, "http://127.0.0.1:50051/"},
		{nil, map[string]string{"LOADGEN_GRPC": "true", "LOADGEN_URL": "http://[::1]:9092"}, "http://[::1]:9092"},
	} {
		c := mustLoad(t, append([]string{"--requests=1", "--stream=false"}, tc.args...), tc.env)
		o := c.opts
		if c.grpcURL != tc.want || o.URL != "" || o.Endpoint != "" || o.Model != "" || o.APIKey != "" || o.Stream {
			t.Errorf("%q %v: grpcURL %q, options %+v; want %q and no HTTP settings", tc.args, tc.env, c.grpcURL, o, tc.want)
		}
	}
	if c := mustLoad(t, []string{"--requests=1", "--grpc=false", "--model=m"}, nil); c.grpcURL != "" || c.opts.Model != "m" {
		t.Errorf("--grpc=false: grpcURL %q, model %q", c.grpcURL, c.opts.Model)
	}
}
