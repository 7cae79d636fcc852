package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/loadgen"
)

// binary is the slotgate-loadgen executable built by TestMain.
var binary string

// waitLimit bounds each run of the binary; nothing here measures time.
const waitLimit = 60 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotgate-loadgen-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "slotgate-loadgen")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build slotgate-loadgen:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// engine serves streams of max_tokens chunks with usage, answering 529
// when the overload function says so, and counts what it sees.
type engine struct {
	overload         func(n int64) bool
	retryAfter       string // with each 529, when set
	n, in, maxIn     atomic.Int64
	streamed, usages atomic.Int64
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := e.n.Add(1) - 1
	cur := e.in.Add(1)
	defer e.in.Add(-1)
	for m := e.maxIn.Load(); cur > m && !e.maxIn.CompareAndSwap(m, cur); m = e.maxIn.Load() {
	}
	var req struct {
		MaxTokens     int  `json:"max_tokens"`
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if e.overload != nil && e.overload(n) {
		w.Header().Set("Content-Type", "application/json")
		if e.retryAfter != "" {
			w.Header().Set("Retry-After", e.retryAfter)
		}
		w.WriteHeader(529)
		fmt.Fprint(w, `{"error":{"message":"Server overloaded: worker at capacity","type":"Overloaded","code":529}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for range req.MaxTokens {
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" x\"}]}\n\n")
		w.(http.Flusher).Flush()
	}
	if req.Stream {
		e.streamed.Add(1)
	}
	if req.StreamOptions.IncludeUsage {
		e.usages.Add(1)
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d}}\n\n", req.MaxTokens)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func startEngine(t *testing.T, e *engine) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

// runBinary runs slotgate-loadgen with args and env (and PATH only) and
// returns its stdout, stderr and exit status.
func runBinary(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s: %v", binary, err)
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("slotgate-loadgen reported a data race:\n%s", stderr.String())
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestBinaryJSON runs the real binary with --json - and checks its JSON.
func TestBinaryJSON(t *testing.T) {
	e := &engine{}
	srv := startEngine(t, e)
	stdout, stderr, code := runBinary(t, nil, "--url", srv.URL, "--requests", "20", "--concurrency", "4",
		"--max-tokens", "5", "--json", "-")
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr)
	}
	var r loadgen.Report
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout has more than the JSON report (no table with --json -):\n%s", stdout)
	}
	if r.Sent != 20 || r.OK != 20 || !maps.Equal(r.ByStatus, map[string]int64{"200": 20}) || e.n.Load() != 20 {
		t.Errorf("sent %d, ok %d, by_status %v, engine saw %d; want 20 successes", r.Sent, r.OK, r.ByStatus, e.n.Load())
	}
	if r.MaxConcurrencyObserved < 1 || r.MaxConcurrencyObserved > 4 || e.maxIn.Load() > 4 {
		t.Errorf("max concurrency observed %d, engine saw %d; want 1..4", r.MaxConcurrencyObserved, e.maxIn.Load())
	}
	if r.TTFT.Count != 20 || r.ITL.Count != 20*4 || r.E2E.Count != 20 || r.OutputTokens != 100 || r.PromptTokens != 60 {
		t.Errorf("ttft %d, itl %d, e2e %d samples, output %d, prompt %d tokens; want 20, 80, 20, 100, 60",
			r.TTFT.Count, r.ITL.Count, r.E2E.Count, r.OutputTokens, r.PromptTokens)
	}
	if e.streamed.Load() != 20 || e.usages.Load() != 20 {
		t.Errorf("engine saw %d streamed requests, %d asking for usage; want 20, 20", e.streamed.Load(), e.usages.Load())
	}
	if r.DurationSeconds <= 0 || r.RequestsPerSecond <= 0 || r.Config.Concurrency != 4 || r.Config.Requests != 20 {
		t.Errorf("duration %v, rate %v, config %+v", r.DurationSeconds, r.RequestsPerSecond, r.Config)
	}
}

// TestBinaryRetry: with --retry (here from its variable) and --deadline,
// each request refused once is served by its second try, and the JSON
// says so: one outcome per request, its tries, the goodput, the config.
func TestBinaryRetry(t *testing.T) {
	// Every other arrival is refused: with one worker, each request's
	// first try. The Retry-After is a fraction of a second, to keep the
	// test short.
	e := &engine{overload: func(n int64) bool { return n%2 == 0 }, retryAfter: "0.01"}
	srv := startEngine(t, e)
	stdout, stderr, code := runBinary(t, []string{"LOADGEN_RETRY=2"}, "--url", srv.URL, "--requests", "10",
		"--concurrency", "1", "--max-tokens", "2", "--deadline", "30s", "--json", "-")
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr)
	}
	var r loadgen.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout)
	}
	if r.Sent != 10 || r.OK != 10 || !maps.Equal(r.ByStatus, map[string]int64{"200": 10}) || e.n.Load() != 20 {
		t.Errorf("sent %d, ok %d, by_status %v, engine saw %d; want 10 served after 20 tries", r.Sent, r.OK, r.ByStatus, e.n.Load())
	}
	if r.Tries != 20 || r.Retries != 10 || r.GaveUp != 0 || r.TimedOut != 0 || r.GoodputPerSecond != r.RequestsPerSecond {
		t.Errorf("tries %d, retries %d, gave_up %d, timed_out %d, goodput %g/s (requests %g/s); want 20, 10, 0, 0, equal",
			r.Tries, r.Retries, r.GaveUp, r.TimedOut, r.GoodputPerSecond, r.RequestsPerSecond)
	}
	if r.Config.Retry != 2 || r.Config.DeadlineSeconds != 30 {
		t.Errorf("config retry %d, deadline %g s; want 2, 30", r.Config.Retry, r.Config.DeadlineSeconds)
	}
}

// TestBinaryBadFlags: bad values exit 2 with one line per problem, naming
// the flag or variable and the value; nothing is sent.
func TestBinaryBadFlags(t *testing.T) {
	e := &engine{}
	srv := startEngine(t, e)
	stdout, stderr, code := runBinary(t, []string{"LOADGEN_TIMEOUT=-1s"},
		"--url", srv.URL, "--requests", "5", "--concurrency", "0", "--max-tokens", "uniform:9:1")
	if code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	want := []string{
		`slotgate-loadgen: --concurrency: must be a whole number from 1 to 100000, got "0"`,
		`slotgate-loadgen: --max-tokens: must be N, uniform:MIN:MAX or normal:MEAN:STDDEV (uniform minimum 9 is above the maximum 1), got "uniform:9:1"`,
		`slotgate-loadgen: LOADGEN_TIMEOUT: must not be negative, got "-1s"`,
	}
	if got := strings.Split(strings.TrimSpace(stderr), "\n"); !equalLines(got, want) {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
	}
	if stdout != "" || e.n.Load() != 0 {
		t.Errorf("stdout %q, engine saw %d requests; want nothing", stdout, e.n.Load())
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"--requests", "1", "stray"}} {
		if _, stderr, code := runBinary(t, nil, args...); code != 2 || !strings.HasPrefix(stderr, "slotgate-loadgen: command line: ") {
			t.Errorf("%q: exit status %d, stderr %q; want 2 and a command line error", args, code, stderr)
		}
	}
}

func equalLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// TestBinaryHelpAndVersion exit 0 and print to stdout.
func TestBinaryHelpAndVersion(t *testing.T) {
	stdout, _, code := runBinary(t, nil, "--help")
	if code != 0 || !strings.Contains(stdout, "LOADGEN_MAX_OUTSTANDING") {
		t.Errorf("--help: exit status %d, stdout:\n%s", code, stdout)
	}
	stdout, _, code = runBinary(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "slotgate-loadgen ") {
		t.Errorf("--version: exit status %d, stdout %q", code, stdout)
	}
}

// TestRunTableAndFile runs the program in process with --json FILE: the
// table goes to stdout, progress lines to stderr, and the file's counts
// are the table's.
func TestRunTableAndFile(t *testing.T) {
	e := &engine{overload: func(n int64) bool { return n%2 == 1 }}
	srv := startEngine(t, e)
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--url", srv.URL, "--requests", "12", "--concurrency", "3", "--max-tokens", "2",
		"--json", path, "--progress-interval", "10ms"}
	if code := run(t.Context(), args, nil, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r loadgen.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !maps.Equal(r.ByStatus, map[string]int64{"200": 6, "529": 6}) || r.Sent != 12 {
		t.Errorf("JSON: sent %d, by_status %v; want 12, 6 × 200 and 6 × 529", r.Sent, r.ByStatus)
	}
	table := stdout.String()
	for name, n := range map[string]int64{"sent": r.Sent, "ok": r.OK, "status 200": r.ByStatus["200"], "status 529": r.ByStatus["529"]} {
		re := regexp.MustCompile(`(?m)^` + name + `\s{2,}` + strconv.FormatInt(n, 10) + `\s*$`)
		if !re.MatchString(table) {
			t.Errorf("table has no row %q with %d:\n%s", name, n, table)
		}
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Errorf("progress off a terminal has \\r:\n%q", stderr.String())
	}
}

// TestRunJSONFileFails: an unwritable --json path fails before any load.
func TestRunJSONFileFails(t *testing.T) {
	e := &engine{}
	srv := startEngine(t, e)
	var stdout, stderr bytes.Buffer
	path := filepath.Join(t.TempDir(), "missing", "out.json")
	code := run(t.Context(), []string{"--url", srv.URL, "--requests", "3", "--json", path}, nil, &stdout, &stderr, false)
	if code != 1 || !strings.HasPrefix(stderr.String(), "slotgate-loadgen: --json: ") || e.n.Load() != 0 {
		t.Errorf("exit status %d, stderr %q, engine saw %d; want 1, a --json error, nothing sent", code, stderr.String(), e.n.Load())
	}
}
