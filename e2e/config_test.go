package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestRefusesBadConfiguration: every bad value stops start-up with exit
// status 2 and one line per problem naming the flag or variable and the
// value.
func TestRefusesBadConfiguration(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		lines []string // each must appear on its own line of stderr
	}{
		{name: "zero limit", args: []string{"--engine-request-limit", "0"},
			lines: []string{`--engine-request-limit: must be a positive integer, got "0"`}},
		{name: "negative limit from env", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "-4"},
			lines: []string{`DYN_ENGINE_REQUEST_LIMIT: must be a positive integer, got "-4"`}},
		{name: "limit not a number", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "many"},
			lines: []string{`DYN_ENGINE_REQUEST_LIMIT`, `"many"`}},
		{name: "queue of one", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "1"},
			lines: []string{`DYN_DYNAMO_REQUEST_QUEUE_LIMIT: must be an integer of at least 2, got "1"`}},
		{name: "queue not a number", env: map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "x"},
			lines: []string{`DYN_DYNAMO_REQUEST_QUEUE_LIMIT`, `"x"`}},
		{name: "every problem at once",
			env:   map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "0", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "1"},
			args:  []string{"--listen", "nowhere", "--log-format", "xml", "--shutdown-timeout", "soon"},
			lines: []string{"DYN_ENGINE_REQUEST_LIMIT", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT", "--listen", "--log-format", "--shutdown-timeout"}},
		{name: "unknown flag", args: []string{"--engine-requests", "3"}, lines: []string{"engine-requests"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sg := launch(t, "", tt.env, tt.args...)
			if code := sg.wait(); code != 2 {
				t.Fatalf("exit status %d, want 2; output:\n%s", code, sg.log.String())
			}
			out := sg.log.String()
			for _, want := range tt.lines {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if tt.name == "every problem at once" {
				if n := len(sg.log.Lines("slotgate: ")); n != 5 {
					t.Errorf("%d problem lines, want 5:\n%s", n, out)
				}
			}
		})
	}
}

// TestOverloadStatusCode: DYN_HTTP_OVERLOAD_STATUS_CODE sets the status of
// capacity rejections; unusable values fall back to 529 with one warning
// naming the variable.
func TestOverloadStatusCode(t *testing.T) {
	tests := []struct {
		value  string
		status int
		warn   bool
	}{
		{value: "503", status: 503},
		{value: " 429 ", status: 429},
		{value: "200", status: 200},
		{value: "999", status: 999},
		{value: "100", status: 529, warn: true},
		{value: "1000", status: 529, warn: true},
		{value: "not-a-code", status: 529, warn: true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			eng := newEngine(t)
			eng.hold()
			sg := start(t, eng.url(), map[string]string{"DYN_HTTP_OVERLOAD_STATUS_CODE": tt.value},
				"--engine-request-limit", "1", "--request-queue-limit", "2")
			for i := range 3 { // one holds the slot, two fill the queue
				go post(context.Background(), http.DefaultClient, sg.proxy, "fill"+string(rune('a'+i)), "{}")
			}
			eventually(t, "a full queue", func() bool { return sg.metric("dynamo_request_queue") == 2 })
			r := post(context.Background(), http.DefaultClient, sg.proxy, "refused", "{}")
			checkOverload(t, r, tt.status, overloadMessage)
			var warnings []string
			for _, l := range sg.log.Lines(`"level":"warn"`) {
				if strings.Contains(l, "DYN_HTTP_OVERLOAD_STATUS_CODE") {
					warnings = append(warnings, l)
				}
			}
			if got := len(warnings) == 1; got != tt.warn || len(warnings) > 1 {
				t.Errorf("warning logged = %v, want %v; lines: %v", got, tt.warn, warnings)
			}
			eng.release()
		})
	}
}

// TestFlagBeatsEnvironment: a flag and its variable feed one value, and the
// flag wins, unlike Dynamo 1.5.0 where the flag alone did nothing.
func TestFlagBeatsEnvironment(t *testing.T) {
	eng := newEngine(t)
	sg := start(t, eng.url(), map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "7", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "9"},
		"--engine-request-limit", "2")
	if got := sg.metric("slotgate_engine_request_limit"); got != 2 {
		t.Errorf("slotgate_engine_request_limit = %v, want the flag's 2", got)
	}
	if got := sg.metric("slotgate_request_queue_limit"); got != 9 {
		t.Errorf("slotgate_request_queue_limit = %v, want the variable's 9", got)
	}
	cfg := sg.log.WaitFor(t, `"msg":"configuration"`, waitLimit)
	for _, want := range []string{`"engine_request_limit_from":"flag"`, `"request_queue_limit_from":"DYN_DYNAMO_REQUEST_QUEUE_LIMIT"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("configuration line lacks %s: %s", want, cfg)
		}
	}
}

// TestHelpListsEverySetting: --help names each flag with its variable.
func TestHelpListsEverySetting(t *testing.T) {
	sg := launch(t, "", nil, "--help")
	if code := sg.wait(); code != 0 {
		t.Fatalf("--help exit status %d", code)
	}
	out := sg.log.String()
	for _, want := range []string{
		"--engine-request-limit", "DYN_ENGINE_REQUEST_LIMIT", "--request-queue-limit", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT",
		"DYN_HTTP_OVERLOAD_STATUS_CODE", "--listen", "SLOTGATE_LISTEN", ":8080", "--engine-url", "SLOTGATE_ENGINE_URL",
		"--admin-listen", "SLOTGATE_ADMIN_LISTEN", ":9090", "--queue-timeout", "--shutdown-timeout", "60s",
		"--drain-delay", "5s", "--engine-health-path", "/health", "--log-level", "--log-format", "json",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestMaxProcs: --max-procs sets the Go runtime's processors (the
// process's own go_sched_gomaxprocs_threads says so), plus one per stream
// relay loop when the relay is on (--relay-loops; a busy loop holds its
// processor), and the configuration line names the value and where it
// came from; auto leaves Go's choice, and a CPU quantity, which a
// Kubernetes manifest might pass by mistake, stops start-up.
func TestMaxProcs(t *testing.T) {
	eng := newEngine(t)
	loops := 1 // the relay's default on one processor: on by default on Linux
	if runtime.GOOS != "linux" {
		loops = 0
	}
	sg := start(t, eng.url(), map[string]string{"SLOTGATE_MAX_PROCS": "1"})
	if got := sg.metric("go_sched_gomaxprocs_threads"); got != float64(1+loops) {
		t.Errorf("go_sched_gomaxprocs_threads = %v with SLOTGATE_MAX_PROCS=1, want %d (1 and the relay's loops)", got, 1+loops)
	}
	cfg := sg.log.WaitFor(t, `"msg":"configuration"`, waitLimit)
	if !strings.Contains(cfg, `"max_procs":1,"max_procs_from":"SLOTGATE_MAX_PROCS"`) {
		t.Errorf("configuration line lacks max_procs 1 from SLOTGATE_MAX_PROCS: %s", cfg)
	}
	sg = start(t, eng.url(), map[string]string{"SLOTGATE_MAX_PROCS": "1"}, "--stream-relay", "off")
	if got := sg.metric("go_sched_gomaxprocs_threads"); got != 1 {
		t.Errorf("go_sched_gomaxprocs_threads = %v with SLOTGATE_MAX_PROCS=1 and the relay off, want 1", got)
	}
	sg = start(t, eng.url(), map[string]string{"GOMAXPROCS": "2"}, "--max-procs", "auto", "--stream-relay", "off")
	if got := sg.metric("go_sched_gomaxprocs_threads"); got != 2 {
		t.Errorf("go_sched_gomaxprocs_threads = %v with auto and GOMAXPROCS=2, want Go's own 2", got)
	}
	if runtime.GOOS == "linux" {
		sg = start(t, eng.url(), map[string]string{"SLOTGATE_RELAY_LOOPS": "2"}, "--max-procs", "1")
		if got := sg.metric("go_sched_gomaxprocs_threads"); got != 3 {
			t.Errorf("go_sched_gomaxprocs_threads = %v with --max-procs 1 and two relay loops, want 3", got)
		}
		line := sg.log.WaitFor(t, `"msg":"stream relay"`, waitLimit)
		if !strings.Contains(line, `"loops":2,"gomaxprocs":3`) {
			t.Errorf("the relay's line lacks its 2 loops and 3 processors: %s", line)
		}
	}
	for _, tt := range []struct{ flag, value, want string }{
		{"--max-procs", "500m", `--max-procs: must be auto, or an integer from 0 (auto) to 1024, got "500m"`},
		{"--relay-loops", "1.5", `--relay-loops: must be auto, or an integer from 0 (auto) to 64, got "1.5"`},
	} {
		bad := launch(t, "", nil, tt.flag, tt.value)
		if code := bad.wait(); code != 2 || !strings.Contains(bad.log.String(), tt.want) {
			t.Errorf("%s %s: exit status %d, want 2 and a line naming it; output:\n%s", tt.flag, tt.value, code, bad.log.String())
		}
	}
}

// TestCollectorPace: slotgate runs Go's collector at GOGC=200 unless its
// environment sets GOGC, which then stands (the process's own
// go_gc_gogc_percent says so); its log's collector line names the pace
// and where it came from. A GOGC Go would read as 100 stops start-up.
func TestCollectorPace(t *testing.T) {
	eng := newEngine(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		want float64
		log  string
	}{
		{name: "default", want: 200, log: `"gogc":"200","gogc_from":"default"`},
		{name: "GOGC=50", env: map[string]string{"GOGC": "50"}, want: 50, log: `"gogc":"50","gogc_from":"GOGC"`},
		{name: "GOGC=100, Go's own", env: map[string]string{"GOGC": "100"}, want: 100, log: `"gogc":"100","gogc_from":"GOGC"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sg := start(t, eng.url(), tt.env)
			if got := sg.metric("go_gc_gogc_percent"); got != tt.want {
				t.Errorf("go_gc_gogc_percent = %v, want %v", got, tt.want)
			}
			if line := sg.log.WaitFor(t, `"msg":"collector"`, waitLimit); !strings.Contains(line, tt.log) {
				t.Errorf("the collector line lacks %s: %s", tt.log, line)
			}
		})
	}
	// Go would read these as 100, silently.
	for _, v := range []string{"200%", "auto", "1e3"} {
		bad := launch(t, eng.url(), map[string]string{"GOGC": v})
		want := fmt.Sprintf(`GOGC: must be off or an integer, the collector's percent, got %q`, v)
		if code := bad.wait(); code != 2 || !strings.Contains(bad.log.String(), want) {
			t.Errorf("GOGC=%s: exit status %d, want 2 and %s; output:\n%s", v, code, want, bad.log.String())
		}
	}
}
