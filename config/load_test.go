package config_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"empty environment", map[string]string{}},
		{"every variable set but empty", func() map[string]string {
			m := map[string]string{}
			for _, s := range allSettings {
				m[s.env] = ""
				for _, name := range otherNames[s.flag] {
					m[name] = ""
				}
			}
			return m
		}()},
		{"unrelated variables", map[string]string{"PATH": "/bin", "SLOTGATE": "x", "DYN_OTHER": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, nil, tc.env)
			if c.EngineRequestLimit != 0 || c.EngineRequestWaitingLimit != 0 || c.RequestQueueLimit != 0 || c.GateOn() {
				t.Errorf("N, W, Q = %d, %d, %d, GateOn %v; want 0, 0, 0 and off (no cap)",
					c.EngineRequestLimit, c.EngineRequestWaitingLimit, c.RequestQueueLimit, c.GateOn())
			}
			if c.PerRankLimits || c.QueueAdaptiveLIFO {
				t.Errorf("PerRankLimits, QueueAdaptiveLIFO = %v, %v; want false, false", c.PerRankLimits, c.QueueAdaptiveLIFO)
			}
			if c.OverloadStatus != 529 || config.DefaultOverloadStatus != 529 {
				t.Errorf("OverloadStatus = %d, DefaultOverloadStatus = %d; want 529", c.OverloadStatus, config.DefaultOverloadStatus)
			}
			if c.QueueTimeout != 0 {
				t.Errorf("QueueTimeout = %v, want 0", c.QueueTimeout)
			}
			if c.Listen != ":8080" || c.AdminListen != ":9090" {
				t.Errorf("Listen, AdminListen = %q, %q; want :8080, :9090", c.Listen, c.AdminListen)
			}
			if c.EngineURL == nil || c.EngineURL.String() != "http://127.0.0.1:8000" {
				t.Errorf("EngineURL = %v, want http://127.0.0.1:8000", c.EngineURL)
			}
			if c.EngineHealthPath != "/health" {
				t.Errorf("EngineHealthPath = %q", c.EngineHealthPath)
			}
			if want := []string{"/health", "/v1/models", "/metrics", "/version"}; !slices.Equal(c.PassthroughPaths, want) {
				t.Errorf("PassthroughPaths = %q, want %q", c.PassthroughPaths, want)
			}
			if c.MaxRequestBodyBytes != 32<<20 {
				t.Errorf("MaxRequestBodyBytes = %d, want %d", c.MaxRequestBodyBytes, 32<<20)
			}
			if c.RetryAfter != time.Second || c.ShutdownTimeout != time.Minute || c.DrainDelay != 5*time.Second {
				t.Errorf("RetryAfter, ShutdownTimeout, DrainDelay = %v, %v, %v; want 1s, 1m, 5s", c.RetryAfter, c.ShutdownTimeout, c.DrainDelay)
			}
			if c.LogLevel != "info" || c.LogFormat != "json" {
				t.Errorf("LogLevel, LogFormat = %q, %q; want info, json", c.LogLevel, c.LogFormat)
			}
			if c.ShowVersion {
				t.Error("ShowVersion set without --version")
			}
			if len(c.Warnings) != 0 {
				t.Errorf("Warnings = %q, want none", c.Warnings)
			}
			for _, s := range allSettings {
				if got := c.Sources[s.flag]; got != "default" {
					t.Errorf("Sources[%q] = %q, want default", s.flag, got)
				}
			}
		})
	}
}

// TestSettingsTableIsComplete checks allSettings against the flags Load
// knows: Sources has an entry for every setting.
func TestSettingsTableIsComplete(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{})
	got := slices.Sorted(maps.Keys(c.Sources))
	var want []string
	for _, s := range allSettings {
		want = append(want, s.flag)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Sources keys = %q\nwant %q (update allSettings and the tests)", got, want)
	}
}

// TestPrecedence checks flag > environment > default for every setting, and
// what Sources says each time.
func TestPrecedence(t *testing.T) {
	str := func(v any) string { return fmt.Sprint(v) }
	for _, tc := range []struct {
		flag, env string
		base      map[string]string // always in the environment
		get       func(config.Config) string
		def       string // value with the default
		envVal    string // given in the environment...
		envWant   string // ...gives this
		flagVal   string // given as a flag...
		flagWant  string // ...gives this
	}{
		{"engine-request-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT", nil,
			func(c config.Config) string { return str(c.EngineRequestLimit) }, "0", "3", "3", "7", "7"},
		{"engine-request-waiting-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT", nil,
			func(c config.Config) string { return str(c.EngineRequestWaitingLimit) }, "0", "3", "3", "7", "7"},
		{"request-queue-limit", "DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT", map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4"},
			func(c config.Config) string { return str(c.RequestQueueLimit) }, "16", "5", "5", "9", "9"},
		{"overload-status-code", "DYN_HTTP_OVERLOAD_STATUS_CODE", nil,
			func(c config.Config) string { return str(c.OverloadStatus) }, "529", "503", "503", "429", "429"},
		{"queue-timeout", "SLOTGATE_QUEUE_TIMEOUT", nil,
			func(c config.Config) string { return str(c.QueueTimeout) }, "0s", "2s", "2s", "750ms", "750ms"},
		{"listen", "SLOTGATE_LISTEN", nil,
			func(c config.Config) string { return c.Listen }, ":8080", "127.0.0.1:7001", "127.0.0.1:7001", ":7002", ":7002"},
		{"engine-url", "SLOTGATE_ENGINE_URL", nil,
			func(c config.Config) string { return str(c.EngineURL) }, "http://127.0.0.1:8000",
			"http://env-engine:8001", "http://env-engine:8001", "https://flag-engine:8443/base", "https://flag-engine:8443/base"},
		{"admin-listen", "SLOTGATE_ADMIN_LISTEN", nil,
			func(c config.Config) string { return c.AdminListen }, ":9090", ":9191", ":9191", "[::1]:9292", "[::1]:9292"},
		{"engine-health-path", "SLOTGATE_ENGINE_HEALTH_PATH", nil,
			func(c config.Config) string { return c.EngineHealthPath }, "/health", "/healthz", "/healthz", "/ready", "/ready"},
		{"passthrough-paths", "SLOTGATE_PASSTHROUGH_PATHS", nil,
			func(c config.Config) string { return str(c.PassthroughPaths) }, "[/health /v1/models /metrics /version]",
			"/a,/b", "[/a /b]", " /c ,, /d", "[/c /d]"},
		{"max-request-body-bytes", "SLOTGATE_MAX_REQUEST_BODY_BYTES", nil,
			func(c config.Config) string { return str(c.MaxRequestBodyBytes) }, "33554432", "1024", "1024", "1", "1"},
		{"max-buffered-body-bytes", "SLOTGATE_MAX_BUFFERED_BODY_BYTES", nil,
			func(c config.Config) string { return str(c.MaxBufferedBodyBytes) }, "268435456", "0", "0", "4096", "4096"},
		{"request-header-timeout", "SLOTGATE_REQUEST_HEADER_TIMEOUT", nil,
			func(c config.Config) string { return str(c.RequestHeaderTimeout) }, "30s", "0", "0s", "2s", "2s"},
		{"stream-relay", "SLOTGATE_STREAM_RELAY", nil,
			func(c config.Config) string { return c.StreamRelay }, autoRelay, "off", "off", "epoll", "epoll"},
		{"max-procs", "SLOTGATE_MAX_PROCS", nil,
			func(c config.Config) string { return str(c.MaxProcs) }, "0", "1", "1", "4", "4"},
		{"relay-loops", "SLOTGATE_RELAY_LOOPS", nil,
			func(c config.Config) string { return str(c.RelayLoops) }, "0", "2", "2", "auto", "0"},
		{"request-body-timeout", "SLOTGATE_REQUEST_BODY_TIMEOUT", nil,
			func(c config.Config) string { return str(c.RequestBodyTimeout) }, "1m0s", "0", "0s", "5s", "5s"},
		{"admin-token-file", "SLOTGATE_ADMIN_TOKEN_FILE", nil,
			func(c config.Config) string { return c.AdminTokenFile }, "", "/run/a", "/run/a", "/run/b", "/run/b"},
		{"retry-after", "SLOTGATE_RETRY_AFTER", nil,
			func(c config.Config) string { return str(c.RetryAfter) }, "1s", "0", "0s", "3s", "3s"},
		{"shutdown-timeout", "SLOTGATE_SHUTDOWN_TIMEOUT", nil,
			func(c config.Config) string { return str(c.ShutdownTimeout) }, "1m0s", "30s", "30s", "2m", "2m0s"},
		{"drain-delay", "SLOTGATE_DRAIN_DELAY", nil,
			func(c config.Config) string { return str(c.DrainDelay) }, "5s", "0s", "0s", "10s", "10s"},
		{"abort-grace", "SLOTGATE_ABORT_GRACE", nil,
			func(c config.Config) string { return str(c.AbortGrace) }, "5ms", "0", "0s", "1s", "1s"},
		{"log-level", "SLOTGATE_LOG_LEVEL", nil,
			func(c config.Config) string { return c.LogLevel }, "info", "debug", "debug", "error", "error"},
		{"log-format", "SLOTGATE_LOG_FORMAT", nil,
			func(c config.Config) string { return c.LogFormat }, "json", "console", "console", "json", "json"},
	} {
		with := func(kv ...string) map[string]string {
			m := maps.Clone(tc.base)
			if m == nil {
				m = map[string]string{}
			}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		for _, c := range []struct {
			name     string
			args     []string
			env      map[string]string
			want, by string
		}{
			{"default", nil, with(), tc.def, "default"},
			{"variable set but empty", nil, with(tc.env, ""), tc.def, "default"},
			{"variable", nil, with(tc.env, tc.envVal), tc.envWant, tc.env},
			{"flag", []string{"--" + tc.flag + "=" + tc.flagVal}, with(), tc.flagWant, "flag"},
			{"flag over variable", []string{"--" + tc.flag + "=" + tc.flagVal}, with(tc.env, tc.envVal), tc.flagWant, "flag"},
			{"flag over empty variable", []string{"--" + tc.flag, tc.flagVal}, with(tc.env, ""), tc.flagWant, "flag"},
			{"single-dash flag over variable", []string{"-" + tc.flag, tc.flagVal}, with(tc.env, tc.envVal), tc.flagWant, "flag"},
		} {
			t.Run(tc.flag+"/"+c.name, func(t *testing.T) {
				cfg := mustLoad(t, c.args, c.env)
				if got := tc.get(cfg); got != c.want {
					t.Errorf("value = %q, want %q", got, c.want)
				}
				if got := cfg.Sources[tc.flag]; got != c.by {
					t.Errorf("Sources[%q] = %q, want %q", tc.flag, got, c.by)
				}
				if len(cfg.Warnings) != 0 {
					t.Errorf("Warnings = %q, want none", cfg.Warnings)
				}
			})
		}
	}
}

func TestEngineRequestLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		wantN     int
		wantQ     int
		wantProbs []bad
	}{
		{name: "unset", env: map[string]string{}},
		{name: "variable set but empty", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": ""}},
		{name: "variable 1", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "1"}, wantN: 1, wantQ: 16},
		{name: "variable 64", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "64"}, wantN: 64, wantQ: 16},
		{name: "variable padded", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": " 8\t"}, wantN: 8, wantQ: 16},
		{name: "flag 2", args: []string{"--engine-request-limit=2"}, wantN: 2, wantQ: 16},
		{name: "flag beats bad variable", args: []string{"--engine-request-limit=3"},
			env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "abc"}, wantN: 3, wantQ: 16},
		{name: "variable 0", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "0"},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "0"}}},
		{name: "variable negative", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "-1"},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "-1"}}},
		{name: "variable not a number", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "abc"},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "abc"}}},
		{name: "variable fraction", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "1.5"},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "1.5"}}},
		{name: "variable blank", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "  "},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "  "}}},
		{name: "variable overflows int", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "99999999999999999999"},
			wantProbs: []bad{{"DYN_ENGINE_REQUEST_LIMIT", "99999999999999999999"}}},
		{name: "flag 0", args: []string{"--engine-request-limit=0"},
			wantProbs: []bad{{"--engine-request-limit", "0"}}},
		{name: "flag negative", args: []string{"--engine-request-limit", "-5"},
			wantProbs: []bad{{"--engine-request-limit", "-5"}}},
		{name: "flag not a number beats good variable", args: []string{"--engine-request-limit=many"},
			env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4"}, wantProbs: []bad{{"--engine-request-limit", "many"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(tc.args, tc.env)
			checkProblems(t, err, tc.wantProbs...)
			if err != nil {
				return
			}
			if c.EngineRequestLimit != tc.wantN || c.RequestQueueLimit != tc.wantQ {
				t.Errorf("N, Q = %d, %d; want %d, %d", c.EngineRequestLimit, c.RequestQueueLimit, tc.wantN, tc.wantQ)
			}
		})
	}
}

func TestRequestQueueLimit(t *testing.T) {
	const limit = "DYN_ENGINE_REQUEST_LIMIT"
	const queue = "DYN_DYNAMO_REQUEST_QUEUE_LIMIT"
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		wantQ     int
		wantProbs []bad
	}{
		{name: "default with a limit", env: map[string]string{limit: "4"}, wantQ: 16},
		{name: "empty with a limit is the default", env: map[string]string{limit: "4", queue: ""}, wantQ: 16},
		{name: "2 is the least", env: map[string]string{limit: "4", queue: "2"}, wantQ: 2},
		{name: "large", env: map[string]string{limit: "4", queue: "100000"}, wantQ: 100000},
		{name: "padded", env: map[string]string{limit: "4", queue: " 32 "}, wantQ: 32},
		{name: "flag", args: []string{"--request-queue-limit=3"}, env: map[string]string{limit: "4"}, wantQ: 3},
		{name: "flag with limit flag", args: []string{"--engine-request-limit=1", "--request-queue-limit=5"}, wantQ: 5},
		{name: "flag beats bad variable", args: []string{"--request-queue-limit=3"},
			env: map[string]string{limit: "4", queue: "abc"}, wantQ: 3},

		{name: "ignored without a limit", env: map[string]string{queue: "32"}},
		{name: "invalid ignored without a limit", env: map[string]string{queue: "abc"}},
		{name: "1 ignored without a limit", env: map[string]string{queue: "1"}},
		{name: "ignored with an empty limit", env: map[string]string{limit: "", queue: "0"}},
		// Dynamo 1.7: a positive queue given by flag (or canonical
		// variable) with no engine limit stops start-up; it was ignored.
		{name: "flag without a limit", args: []string{"--request-queue-limit=1"},
			wantProbs: []bad{{"--request-queue-limit", "1"}}},

		{name: "1 with a limit", env: map[string]string{limit: "4", queue: "1"}, wantProbs: []bad{{queue, "1"}}},
		{name: "0 with a limit", env: map[string]string{limit: "4", queue: "0"}, wantProbs: []bad{{queue, "0"}}},
		{name: "abc with a limit", env: map[string]string{limit: "4", queue: "abc"}, wantProbs: []bad{{queue, "abc"}}},
		{name: "negative with a limit", env: map[string]string{limit: "4", queue: "-16"}, wantProbs: []bad{{queue, "-16"}}},
		// Dynamo 1.7: under the flag, any whole number, 0 for no queue.
		{name: "flag 1 with a limit", args: []string{"--request-queue-limit=1"}, env: map[string]string{limit: "4"}, wantQ: 1},
		{name: "flag 0 with limit flag", args: []string{"--engine-request-limit=4", "--request-queue-limit=0"}, wantQ: 0},
		{name: "flag negative with a limit", args: []string{"--request-queue-limit=-1"},
			env: map[string]string{limit: "4"}, wantProbs: []bad{{"--request-queue-limit", "-1"}}},
		{name: "flag abc with a limit", args: []string{"--request-queue-limit=abc"},
			env: map[string]string{limit: "4", queue: "8"}, wantProbs: []bad{{"--request-queue-limit", "abc"}}},
		{name: "both bad, both reported", env: map[string]string{limit: "0", queue: "1"},
			wantProbs: []bad{{limit, "0"}, {queue, "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(tc.args, tc.env)
			checkProblems(t, err, tc.wantProbs...)
			if err != nil {
				return
			}
			if c.RequestQueueLimit != tc.wantQ {
				t.Errorf("RequestQueueLimit = %d, want %d", c.RequestQueueLimit, tc.wantQ)
			}
		})
	}
}

// overloadTable is Dynamo's table for DYN_HTTP_OVERLOAD_STATUS_CODE, plus a
// few more; ok says whether the value is usable as given.
var overloadTable = []struct {
	name, value string
	want        int
	ok          bool
}{
	{"empty", "", 529, false},
	{"not a code", "not-a-code", 529, false},
	{"99", "99", 529, false},
	{"100", "100", 529, false},
	{"199", "199", 529, false},
	{"1000", "1000", 529, false},
	{"200", "200", 200, true},
	{"503", "503", 503, true},
	{"529", "529", 529, true},
	{"600", "600", 600, true},
	{"999", "999", 999, true},
	{"padded 503", " 503 ", 503, true},
	{"tab and newline", "\t429\n", 429, true},
	{"blank", "   ", 529, false},
	{"negative", "-503", 529, false},
	{"zero", "0", 529, false},
	{"fraction", "503.0", 529, false},
	{"hex", "0x1f7", 529, false},
	{"inner space", "5 03", 529, false},
	{"huge", "99999999999999999999999", 529, false},
	{"plus sign", "+503", 503, true},
	{"leading zero", "0503", 503, true},
}

func TestParseOverloadStatus(t *testing.T) {
	for _, tc := range overloadTable {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := config.ParseOverloadStatus(tc.value)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseOverloadStatus(%q) = %d, %v; want %d, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestOverloadStatus(t *testing.T) {
	const name = "DYN_HTTP_OVERLOAD_STATUS_CODE"
	check := func(t *testing.T, c config.Config, err error, want int, warnWho, warnValue string) {
		t.Helper()
		if err != nil {
			t.Fatalf("Load: the overload status must never stop start-up: %v", err)
		}
		if c.OverloadStatus != want {
			t.Errorf("OverloadStatus = %d, want %d", c.OverloadStatus, want)
		}
		if warnWho == "" {
			if len(c.Warnings) != 0 {
				t.Errorf("Warnings = %q, want none", c.Warnings)
			}
			return
		}
		if len(c.Warnings) != 1 {
			t.Fatalf("Warnings = %q, want exactly one", c.Warnings)
		}
		w := c.Warnings[0]
		if !strings.HasPrefix(w, warnWho+": ") || !strings.Contains(w, fmt.Sprintf("%q", warnValue)) || !strings.Contains(w, "529") {
			t.Errorf("warning %q does not name %s, %q and 529", w, warnWho, warnValue)
		}
	}
	t.Run("unset", func(t *testing.T) {
		c, err := config.Load(nil, map[string]string{})
		check(t, c, err, 529, "", "")
	})
	for _, tc := range overloadTable {
		t.Run("variable/"+tc.name, func(t *testing.T) {
			c, err := config.Load(nil, map[string]string{name: tc.value})
			switch {
			case tc.value == "": // set but empty is unset: no warning
				check(t, c, err, 529, "", "")
			case tc.ok:
				check(t, c, err, tc.want, "", "")
			default:
				check(t, c, err, 529, name, tc.value)
			}
		})
		t.Run("flag/"+tc.name, func(t *testing.T) {
			c, err := config.Load([]string{"--overload-status-code=" + tc.value}, map[string]string{name: "503"})
			if tc.ok {
				check(t, c, err, tc.want, "", "")
			} else {
				check(t, c, err, 529, "--overload-status-code", tc.value)
			}
		})
	}
	t.Run("warning does not hide errors", func(t *testing.T) {
		c, err := config.Load(nil, map[string]string{name: "99", "SLOTGATE_LOG_LEVEL": "loud"})
		checkProblems(t, err, bad{"SLOTGATE_LOG_LEVEL", "loud"})
		if len(c.Warnings) != 1 || c.OverloadStatus != 529 {
			t.Errorf("Warnings = %q, OverloadStatus = %d; want one warning and 529", c.Warnings, c.OverloadStatus)
		}
	})
}

// TestValidation covers the remaining settings, one problem or none per case.
func TestValidation(t *testing.T) {
	runValidation(t, []validationCase{
		// Processors.
		{name: "max procs auto, any case", env: map[string]string{"SLOTGATE_MAX_PROCS": " AUTO "},
			check: func(t *testing.T, c config.Config) { eq(t, "MaxProcs", c.MaxProcs, 0) }},
		{name: "max procs 0 is auto (a pod without a CPU request)", env: map[string]string{"SLOTGATE_MAX_PROCS": "0"},
			check: func(t *testing.T, c config.Config) { eq(t, "MaxProcs", c.MaxProcs, 0) }},
		{name: "max procs 2", args: []string{"--max-procs=2"},
			check: func(t *testing.T, c config.Config) { eq(t, "MaxProcs", c.MaxProcs, 2) }},
		{name: "max procs at its bound", args: []string{"--max-procs=1024"}},
		{name: "max procs negative", env: map[string]string{"SLOTGATE_MAX_PROCS": "-1"},
			probs: []bad{{"SLOTGATE_MAX_PROCS", "-1"}}},
		{name: "max procs past its bound", args: []string{"--max-procs=1025"}, probs: []bad{{"--max-procs", "1025"}}},
		{name: "max procs a CPU quantity", env: map[string]string{"SLOTGATE_MAX_PROCS": "500m"},
			probs: []bad{{"SLOTGATE_MAX_PROCS", "500m"}}},
		{name: "max procs empty flag", args: []string{"--max-procs="}, probs: []bad{{"--max-procs", ""}}},
		{name: "relay loops 2", env: map[string]string{"SLOTGATE_RELAY_LOOPS": "2"},
			check: func(t *testing.T, c config.Config) { eq(t, "RelayLoops", c.RelayLoops, 2) }},
		{name: "relay loops at its bound", args: []string{"--relay-loops=64"}},
		{name: "relay loops past its bound", args: []string{"--relay-loops=65"}, probs: []bad{{"--relay-loops", "65"}}},
		{name: "relay loops negative", env: map[string]string{"SLOTGATE_RELAY_LOOPS": "-1"},
			probs: []bad{{"SLOTGATE_RELAY_LOOPS", "-1"}}},
		{name: "relay loops a word", args: []string{"--relay-loops=two"}, probs: []bad{{"--relay-loops", "two"}}},
		{name: "relay loops with the relay off", args: []string{"--relay-loops=2", "--stream-relay=off"},
			check: func(t *testing.T, c config.Config) {
				if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "--relay-loops=2 does nothing") {
					t.Errorf("Warnings = %q, want one saying --relay-loops=2 does nothing", c.Warnings)
				}
			}},
		// Addresses.
		{name: "listen host:port", env: map[string]string{"SLOTGATE_LISTEN": "0.0.0.0:80"},
			check: func(t *testing.T, c config.Config) { eq(t, "Listen", c.Listen, "0.0.0.0:80") }},
		{name: "listen ipv6", args: []string{"--listen=[::1]:8081"},
			check: func(t *testing.T, c config.Config) { eq(t, "Listen", c.Listen, "[::1]:8081") }},
		{name: "listen port 0", args: []string{"--listen=:0"},
			check: func(t *testing.T, c config.Config) { eq(t, "Listen", c.Listen, ":0") }},
		{name: "listen port 65535", args: []string{"--listen=:65535"}},
		{name: "listen without port", env: map[string]string{"SLOTGATE_LISTEN": "localhost"},
			probs: []bad{{"SLOTGATE_LISTEN", "localhost"}}},
		{name: "listen empty port", args: []string{"--listen=localhost:"}, probs: []bad{{"--listen", "localhost:"}}},
		{name: "listen named port", args: []string{"--listen=:http"}, probs: []bad{{"--listen", ":http"}}},
		{name: "listen port too big", args: []string{"--listen=:65536"}, probs: []bad{{"--listen", ":65536"}}},
		{name: "listen negative port", args: []string{"--listen=:-1"}, probs: []bad{{"--listen", ":-1"}}},
		{name: "listen too many colons", args: []string{"--listen=::1:80"}, probs: []bad{{"--listen", "::1:80"}}},
		{name: "flag listen empty", args: []string{"--listen="}, probs: []bad{{"--listen", ""}}},
		{name: "admin without port", env: map[string]string{"SLOTGATE_ADMIN_LISTEN": "9090"},
			probs: []bad{{"SLOTGATE_ADMIN_LISTEN", "9090"}}},
		{name: "admin equals listen", args: []string{"--listen=:7000", "--admin-listen=:7000"},
			probs: []bad{{"--admin-listen", ":7000"}}},
		{name: "admin equals listen from variables",
			env:   map[string]string{"SLOTGATE_LISTEN": "127.0.0.1:7000", "SLOTGATE_ADMIN_LISTEN": "127.0.0.1:7000"},
			probs: []bad{{"SLOTGATE_ADMIN_LISTEN", "127.0.0.1:7000"}}},
		{name: "admin equals default listen", env: map[string]string{"SLOTGATE_ADMIN_LISTEN": ":8080"},
			probs: []bad{{"SLOTGATE_ADMIN_LISTEN", ":8080"}}},
		{name: "listen equals default admin", args: []string{"--listen=:9090"},
			probs: []bad{{"--admin-listen (default)", ":9090"}}},
		{name: "same port other host", args: []string{"--listen=127.0.0.1:7000", "--admin-listen=:7000"}},
		{name: "both port 0", args: []string{"--listen=:0", "--admin-listen=:0"},
			check: func(t *testing.T, c config.Config) { eq(t, "AdminListen", c.AdminListen, ":0") }},
		{name: "both host port 0", args: []string{"--listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0"}},

		// Engine URL.
		{name: "engine https with path", env: map[string]string{"SLOTGATE_ENGINE_URL": "https://engine:8443/v"},
			check: func(t *testing.T, c config.Config) { eq(t, "EngineURL", c.EngineURL.String(), "https://engine:8443/v") }},
		{name: "engine url padded", args: []string{"--engine-url= http://engine:8000 "},
			check: func(t *testing.T, c config.Config) { eq(t, "EngineURL.Host", c.EngineURL.Host, "engine:8000") }},
		{name: "engine url no scheme", args: []string{"--engine-url=127.0.0.1:8000"}, probs: []bad{{"--engine-url", "127.0.0.1:8000"}}},
		{name: "engine url host only", args: []string{"--engine-url=engine"}, probs: []bad{{"--engine-url", "engine"}}},
		{name: "engine url ftp", env: map[string]string{"SLOTGATE_ENGINE_URL": "ftp://engine"},
			probs: []bad{{"SLOTGATE_ENGINE_URL", "ftp://engine"}}},
		{name: "engine url no host", args: []string{"--engine-url=http://"}, probs: []bad{{"--engine-url", "http://"}}},
		{name: "engine url path only", args: []string{"--engine-url=http:/x"}, probs: []bad{{"--engine-url", "http:/x"}}},
		{name: "engine url query", args: []string{"--engine-url=http://engine:8000/?a=b"},
			probs: []bad{{"--engine-url", "http://engine:8000/?a=b"}}},
		{name: "engine url fragment", args: []string{"--engine-url=http://engine#frag"},
			probs: []bad{{"--engine-url", "http://engine#frag"}}},
		{name: "engine url unparsable", args: []string{"--engine-url=http://[::1"}, probs: []bad{{"--engine-url", "http://[::1"}}},
		{name: "engine url empty flag", args: []string{"--engine-url="}, probs: []bad{{"--engine-url", ""}}},

		// Paths.
		{name: "health path", args: []string{"--engine-health-path=/v1/health"},
			check: func(t *testing.T, c config.Config) { eq(t, "EngineHealthPath", c.EngineHealthPath, "/v1/health") }},
		{name: "health path relative", args: []string{"--engine-health-path=health"}, probs: []bad{{"--engine-health-path", "health"}}},
		{name: "health path query", env: map[string]string{"SLOTGATE_ENGINE_HEALTH_PATH": "/health?x=1"},
			probs: []bad{{"SLOTGATE_ENGINE_HEALTH_PATH", "/health?x=1"}}},
		{name: "passthrough empty flag", args: []string{"--passthrough-paths="},
			check: func(t *testing.T, c config.Config) {
				if len(c.PassthroughPaths) != 0 {
					t.Errorf("PassthroughPaths = %q, want none", c.PassthroughPaths)
				}
			}},
		{name: "passthrough one", env: map[string]string{"SLOTGATE_PASSTHROUGH_PATHS": "/only"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "PassthroughPaths", fmt.Sprint(c.PassthroughPaths), "[/only]")
			}},
		{name: "passthrough relative entry", env: map[string]string{"SLOTGATE_PASSTHROUGH_PATHS": "/a,b"},
			probs: []bad{{"SLOTGATE_PASSTHROUGH_PATHS", "/a,b"}}},
		{name: "passthrough entry with space", args: []string{"--passthrough-paths=/a b"}, probs: []bad{{"--passthrough-paths", "/a b"}}},
		{name: "passthrough entry with fragment", args: []string{"--passthrough-paths=/a#b"}, probs: []bad{{"--passthrough-paths", "/a#b"}}},

		// Body limit.
		{name: "body 1", args: []string{"--max-request-body-bytes=1"},
			check: func(t *testing.T, c config.Config) { eq(t, "MaxRequestBodyBytes", c.MaxRequestBodyBytes, int64(1)) }},
		{name: "body 0", args: []string{"--max-request-body-bytes=0"}, probs: []bad{{"--max-request-body-bytes", "0"}}},
		{name: "body negative", env: map[string]string{"SLOTGATE_MAX_REQUEST_BODY_BYTES": "-1"},
			probs: []bad{{"SLOTGATE_MAX_REQUEST_BODY_BYTES", "-1"}}},
		{name: "body with unit", env: map[string]string{"SLOTGATE_MAX_REQUEST_BODY_BYTES": "32MiB"},
			probs: []bad{{"SLOTGATE_MAX_REQUEST_BODY_BYTES", "32MiB"}}},

		// Durations.
		{name: "queue timeout", args: []string{"--queue-timeout=1m30s"},
			check: func(t *testing.T, c config.Config) { eq(t, "QueueTimeout", c.QueueTimeout, 90*time.Second) }},
		{name: "queue timeout negative", env: map[string]string{"SLOTGATE_QUEUE_TIMEOUT": "-1s"},
			probs: []bad{{"SLOTGATE_QUEUE_TIMEOUT", "-1s"}}},
		{name: "queue timeout no unit", args: []string{"--queue-timeout=5"}, probs: []bad{{"--queue-timeout", "5"}}},
		{name: "queue timeout garbage", args: []string{"--queue-timeout=soon"}, probs: []bad{{"--queue-timeout", "soon"}}},
		{name: "drain delay 0", args: []string{"--drain-delay=0"},
			check: func(t *testing.T, c config.Config) { eq(t, "DrainDelay", c.DrainDelay, time.Duration(0)) }},
		{name: "drain delay negative", args: []string{"--drain-delay=-5s"}, probs: []bad{{"--drain-delay", "-5s"}}},
		{name: "abort grace 0", args: []string{"--abort-grace=0"},
			check: func(t *testing.T, c config.Config) { eq(t, "AbortGrace", c.AbortGrace, time.Duration(0)) }},
		{name: "abort grace 1s", args: []string{"--abort-grace=1s"},
			check: func(t *testing.T, c config.Config) { eq(t, "AbortGrace", c.AbortGrace, time.Second) }},
		{name: "abort grace over 1s", args: []string{"--abort-grace=1001ms"}, probs: []bad{{"--abort-grace", "1001ms"}}},
		{name: "abort grace negative", args: []string{"--abort-grace=-1ms"}, probs: []bad{{"--abort-grace", "-1ms"}}},
		{name: "abort grace not a duration", args: []string{"--abort-grace=5"}, probs: []bad{{"--abort-grace", "5"}}},
		{name: "shutdown timeout 1ms", args: []string{"--shutdown-timeout=1ms"},
			check: func(t *testing.T, c config.Config) { eq(t, "ShutdownTimeout", c.ShutdownTimeout, time.Millisecond) }},
		{name: "shutdown timeout 0", args: []string{"--shutdown-timeout=0s"}, probs: []bad{{"--shutdown-timeout", "0s"}}},
		{name: "shutdown timeout negative", env: map[string]string{"SLOTGATE_SHUTDOWN_TIMEOUT": "-1m"},
			probs: []bad{{"SLOTGATE_SHUTDOWN_TIMEOUT", "-1m"}}},
		{name: "retry after 0 sends none", args: []string{"--retry-after=0s"},
			check: func(t *testing.T, c config.Config) { eq(t, "RetryAfter", c.RetryAfter, time.Duration(0)) }},
		{name: "retry after 2m", args: []string{"--retry-after=2m"},
			check: func(t *testing.T, c config.Config) { eq(t, "RetryAfter", c.RetryAfter, 2*time.Minute) }},
		{name: "retry after 1500ms", args: []string{"--retry-after=1500ms"}, probs: []bad{{"--retry-after", "1500ms"}}},
		{name: "retry after auto", env: map[string]string{"SLOTGATE_RETRY_AFTER": " Auto"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "RetryAfterAuto", c.RetryAfterAuto, true)
				eq(t, "RetryAfter", c.RetryAfter, time.Second)
			}},
		{name: "retry after fixed is not auto", args: []string{"--retry-after=5s"},
			check: func(t *testing.T, c config.Config) { eq(t, "RetryAfterAuto", c.RetryAfterAuto, false) }},
		{name: "retry after automatic", args: []string{"--retry-after=automatic"}, probs: []bad{{"--retry-after", "automatic"}}},
		{name: "retry after 500ms", env: map[string]string{"SLOTGATE_RETRY_AFTER": "500ms"},
			probs: []bad{{"SLOTGATE_RETRY_AFTER", "500ms"}}},
		{name: "retry after negative, one problem", args: []string{"--retry-after=-1.5s"}, probs: []bad{{"--retry-after", "-1.5s"}}},
		{name: "retry after garbage", args: []string{"--retry-after=x"}, probs: []bad{{"--retry-after", "x"}}},

		// Logging.
		{name: "log level debug", args: []string{"--log-level=debug"}},
		{name: "log level warn", env: map[string]string{"SLOTGATE_LOG_LEVEL": "warn"}},
		{name: "log level error", env: map[string]string{"SLOTGATE_LOG_LEVEL": "error"}},
		{name: "log level unknown", env: map[string]string{"SLOTGATE_LOG_LEVEL": "trace"},
			probs: []bad{{"SLOTGATE_LOG_LEVEL", "trace"}}},
		{name: "log level warning", args: []string{"--log-level=warning"}, probs: []bad{{"--log-level", "warning"}}},
		{name: "log format console", args: []string{"--log-format=console"}},
		{name: "log format text", env: map[string]string{"SLOTGATE_LOG_FORMAT": "text"},
			probs: []bad{{"SLOTGATE_LOG_FORMAT", "text"}}},
		{name: "log format empty flag", args: []string{"--log-format="}, probs: []bad{{"--log-format", ""}}},
	})
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestEveryProblemReported checks that Load does not stop at the first bad
// value: each problem gets its own line, naming its source and value.
func TestEveryProblemReported(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		probs []bad
	}{
		{
			name: "four, flags and variables",
			args: []string{"--request-queue-limit=-1", "--retry-after=1500ms"},
			env: map[string]string{
				"DYN_ENGINE_REQUEST_LIMIT":      "0",
				"SLOTGATE_LOG_LEVEL":            "loud",
				"DYN_HTTP_OVERLOAD_STATUS_CODE": "99", // a warning, not a problem
			},
			probs: []bad{
				{"DYN_ENGINE_REQUEST_LIMIT", "0"},
				{"--request-queue-limit", "-1"},
				{"SLOTGATE_LOG_LEVEL", "loud"},
				{"--retry-after", "1500ms"},
			},
		},
		{
			name: "four, flag over variable",
			args: []string{"--engine-request-limit=-3", "--listen=nope", "--log-format=xml"},
			env: map[string]string{
				"DYN_ENGINE_REQUEST_LIMIT":       "4", // overridden
				"DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "abc",
				"SLOTGATE_LOG_FORMAT":            "console", // overridden
			},
			probs: []bad{
				{"--engine-request-limit", "-3"},
				{"DYN_DYNAMO_REQUEST_QUEUE_LIMIT", "abc"},
				{"--listen", "nope"},
				{"--log-format", "xml"},
			},
		},
		{
			name: "every setting bad at once",
			args: []string{"--listen=x", "--admin-listen=y", "--engine-url=ftp://e", "--drain-delay=-1s"},
			env: map[string]string{
				"DYN_ENGINE_REQUEST_LIMIT":        "x",
				"DYN_DYNAMO_REQUEST_QUEUE_LIMIT":  "1",
				"SLOTGATE_QUEUE_TIMEOUT":          "-2s",
				"SLOTGATE_ENGINE_HEALTH_PATH":     "h",
				"SLOTGATE_PASSTHROUGH_PATHS":      "p",
				"SLOTGATE_MAX_REQUEST_BODY_BYTES": "0",
				"SLOTGATE_RETRY_AFTER":            "1.5s",
				"SLOTGATE_SHUTDOWN_TIMEOUT":       "0s",
				"SLOTGATE_LOG_LEVEL":              "l",
				"SLOTGATE_LOG_FORMAT":             "f",
			},
			probs: []bad{
				{"DYN_ENGINE_REQUEST_LIMIT", "x"},
				{"DYN_DYNAMO_REQUEST_QUEUE_LIMIT", "1"},
				{"SLOTGATE_QUEUE_TIMEOUT", "-2s"},
				{"--listen", "x"},
				{"--admin-listen", "y"},
				{"--engine-url", "ftp://e"},
				{"SLOTGATE_ENGINE_HEALTH_PATH", "h"},
				{"SLOTGATE_PASSTHROUGH_PATHS", "p"},
				{"SLOTGATE_MAX_REQUEST_BODY_BYTES", "0"},
				{"SLOTGATE_RETRY_AFTER", "1.5s"},
				{"SLOTGATE_SHUTDOWN_TIMEOUT", "0s"},
				{"--drain-delay", "-1s"},
				{"SLOTGATE_LOG_LEVEL", "l"},
				{"SLOTGATE_LOG_FORMAT", "f"},
			},
		},
		{
			name:  "value with a newline stays on one line",
			env:   map[string]string{"SLOTGATE_LOG_LEVEL": "info\nerror", "SLOTGATE_LOG_FORMAT": "a\nb"},
			probs: []bad{{"SLOTGATE_LOG_LEVEL", "info\nerror"}, {"SLOTGATE_LOG_FORMAT", "a\nb"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(tc.args, tc.env)
			checkProblems(t, err, tc.probs...)
			if errors.Is(err, flag.ErrHelp) {
				t.Error("validation error matches flag.ErrHelp")
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		help     bool   // want flag.ErrHelp
		errHas   string // want another error containing this
		version  bool   // want ShowVersion
		versionE bool   // ...together with a validation error
	}{
		{name: "no arguments"},
		{name: "-h", args: []string{"-h"}, help: true},
		{name: "--help", args: []string{"--help"}, help: true},
		{name: "-help", args: []string{"-help"}, help: true},
		{name: "--help after flags", args: []string{"--listen=:1", "--help"}, help: true},
		{name: "--help with bad settings", args: []string{"--help"},
			env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "0"}, help: true},
		{name: "unknown flag", args: []string{"--no-such-flag=1"}, errHas: "no-such-flag"},
		{name: "unknown single-dash flag", args: []string{"-x"}, errHas: "-x"},
		{name: "flag without value", args: []string{"--listen"}, errHas: "listen"},
		{name: "positional argument", args: []string{"serve"}, errHas: "serve"},
		{name: "positional after flags", args: []string{"--listen=:1", "extra"}, errHas: "extra"},
		{name: "positional after --", args: []string{"--", "--listen=:1"}, errHas: "--listen=:1"},
		{name: "bare --", args: []string{"--"}},
		{name: "--version", args: []string{"--version"}, version: true},
		{name: "-version", args: []string{"-version"}, version: true},
		{name: "--version=true", args: []string{"--version=true"}, version: true},
		{name: "--version=false", args: []string{"--version=false"}},
		{name: "--version=maybe", args: []string{"--version=maybe"}, errHas: "version"},
		{name: "--version with bad settings", args: []string{"--version"},
			env: map[string]string{"SLOTGATE_LOG_LEVEL": "loud"}, version: true, versionE: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = map[string]string{}
			}
			c, err := config.Load(tc.args, env)
			switch {
			case tc.help:
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err = %v, want flag.ErrHelp", err)
				}
			case tc.errHas != "":
				if err == nil || errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err = %v, want an error naming %q", err, tc.errHas)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("err = %q, want it to name %q", err, tc.errHas)
				}
			case tc.versionE:
				// cmd/slotgate prints the version before it looks at err.
				if err == nil {
					t.Fatal("want the validation error too")
				}
			default:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			}
			if c.ShowVersion != tc.version {
				t.Errorf("ShowVersion = %v, want %v", c.ShowVersion, tc.version)
			}
		})
	}
}

// TestNilEnvironment checks that the package reads nothing by itself: a
// nil environment is an empty one, not the process's.
func TestNilEnvironment(t *testing.T) {
	t.Setenv("DYN_ENGINE_REQUEST_LIMIT", "abc")
	t.Setenv("SLOTGATE_LISTEN", ":1234")
	c, err := config.Load(nil, nil)
	if err != nil {
		t.Fatalf("Load(nil, nil) read the process environment: %v", err)
	}
	if c.EngineRequestLimit != 0 || c.Listen != ":8080" {
		t.Errorf("Load(nil, nil) read the process environment: N = %d, Listen = %q", c.EngineRequestLimit, c.Listen)
	}
}

// TestLoadDoesNotKeepEnvironment checks that Load does not modify or hold
// on to the caller's map.
func TestLoadDoesNotModifyEnvironment(t *testing.T) {
	env := map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4", "SLOTGATE_LOG_LEVEL": ""}
	before := maps.Clone(env)
	mustLoad(t, []string{"--listen=:1"}, env)
	if !reflect.DeepEqual(env, before) {
		t.Errorf("environment changed: %q, was %q", env, before)
	}
}

// autoRelay is what --stream-relay auto is read as here.
var autoRelay = map[bool]string{true: "epoll", false: "off"}[runtime.GOOS == "linux"]
