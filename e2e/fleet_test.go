package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/testlog"
)

// buildFleet builds the reference frontend and the fleet demo
// (examples/frontend) into a folder of the test's, with the race detector
// when the tests run with it, and returns the folder.
func buildFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "../examples/frontend/cmd/frontend", "../examples/frontend/cmd/fleet-demo")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("build the frontend and the fleet demo: %v\n%s", err, out)
	}
	return dir
}

// fleetSummary is the fleet demo's --summary-json.
type fleetSummary struct {
	Modes []struct {
		Mode             string  `json:"mode"`
		Sent             int     `json:"sent"`
		Served           int     `json:"served"`
		Client529        int     `json:"client_529"`
		Other            int     `json:"other_statuses"`
		TTFTP50          float64 `json:"ttft_p50_seconds"`
		Absorbed529      int64   `json:"absorbed_529"`
		Exclusions       int64   `json:"exclusions"`
		FrontendRequests int64   `json:"frontend_requests"`
	} `json:"modes"`
	Processes []struct {
		Name  string `json:"name"`
		PID   int    `json:"pid"`
		Ended bool   `json:"ended"`
	} `json:"processes"`
}

// TestFleetDemo runs `make demo-fleet`'s program with short bursts: three
// workers, the load-mode frontend, then the round-robin one. Every process
// it started must have ended, both modes must be in its summary with
// figures that add up, and in load mode the frontend must have routed
// around a busy worker (or retried a 529 elsewhere) at least once.
func TestFleetDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet demo drives two bursts of two seconds; skipped with -short")
	}
	dir := buildFleet(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "fleet-demo"), "--bin", binDir,
		"--frontend", filepath.Join(dir, "frontend"), "--duration", "2s", "--summary-json", summaryPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fleet-demo: %v\n%s", err, out)
	}
	var s fleetSummary
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary %s: %v", b, err)
	}
	if len(s.Modes) != 2 || s.Modes[0].Mode != "load" || s.Modes[1].Mode != "roundrobin" {
		t.Fatalf("modes in the summary: %s, want load then roundrobin", b)
	}
	for _, m := range s.Modes {
		if m.Sent == 0 || m.Served == 0 || m.Served+m.Client529+m.Other != m.Sent || m.FrontendRequests != int64(m.Sent) {
			t.Errorf("%s: served %d + 529 %d + other %d should be the %d sent, all through the frontend (%d): %s",
				m.Mode, m.Served, m.Client529, m.Other, m.Sent, m.FrontendRequests, b)
		}
	}
	if load := s.Modes[0]; load.Exclusions == 0 && load.Absorbed529 == 0 {
		t.Errorf("in load mode the frontend never left a busy worker out nor retried a 529: %s\n%s", b, out)
	}
	if rr := s.Modes[1]; rr.Exclusions != 0 {
		t.Errorf("round robin left %d workers out; it must be blind to load", rr.Exclusions)
	}
	checkAllEnded(t, s, 10)
	for _, want := range []string{"worker-0", "frontend  requests", "Summary: the same burst", "Every process stopped (10)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// checkAllEnded checks that the demo recorded want processes, each ended,
// and that none of their pids is alive now.
func checkAllEnded(t *testing.T, s fleetSummary, want int) {
	t.Helper()
	if len(s.Processes) != want {
		t.Errorf("%d processes recorded, want %d (3 enginesims, 3 slotgates, 2 frontends, 2 loadgens)", len(s.Processes), want)
	}
	for _, p := range s.Processes {
		if !p.Ended {
			t.Errorf("%s (pid %d) did not end", p.Name, p.PID)
		}
		if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists: kill 0 = %v", p.Name, p.PID, err)
		}
	}
}

// frontendProc runs the frontend binary with args on a port the kernel
// picks, and returns its URL once it listens; it is killed when the test
// ends.
func frontendProc(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "frontend"), append([]string{"--listen", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	logs, exited := testlog.New(), make(chan struct{})
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the frontend: %v", err)
	}
	go func() { _ = cmd.Wait(); logs.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if strings.Contains(logs.String(), "WARNING: DATA RACE") || t.Failed() {
			t.Errorf("frontend output:\n%s", logs.String())
		}
	})
	var line struct{ Addr string }
	if err := json.Unmarshal([]byte(logs.WaitFor(t, `"msg":"listening"`, waitLimit)), &line); err != nil {
		t.Fatalf("parse the frontend's listening line: %v", err)
	}
	return "http://" + line.Addr
}

// frontendStats reads the frontend's counters.
func frontendStats(t *testing.T, url string) map[string]any {
	t.Helper()
	_, body := get(t, url+"/frontend/stats")
	var st map[string]any
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("frontend stats %q: %v", body, err)
	}
	return st
}

// checkFrontendRefusal checks one of the frontend's own refusals: the
// status, OpenAI's error shape and, for 529, Retry-After.
func checkFrontendRefusal(t *testing.T, r result, status int, message string) {
	t.Helper()
	var e errorJSON
	if r.err != nil || r.status != status || json.Unmarshal([]byte(r.body), &e) != nil || !strings.Contains(e.Error.Message, message) {
		t.Fatalf("answer %d %q (%v), want %d with %q", r.status, r.body, r.err, status, message)
	}
	if status == 529 && r.header.Get("Retry-After") != "1" {
		t.Errorf("529 without Retry-After: 1: %v", r.header)
	}
}

// The frontend answers 503 when no worker is registered or none is
// reachable.
func TestFrontendUnavailable(t *testing.T) {
	dir := buildFleet(t)
	closed := closedPort(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no worker", nil},
		{"none reachable", []string{"--worker", "proxy=http://" + closed + ",admin=http://" + closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := frontendProc(t, dir, tc.args...)
			r := post(context.Background(), http.DefaultClient, url, "unavailable", `{"model":"sim-model","prompt":"hi","max_tokens":1}`)
			checkFrontendRefusal(t, r, http.StatusServiceUnavailable, "Service unavailable")
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Two real slotgates (N=1, no queue), each holding one long stream: the
// frontend's request is refused by one, retried on the other, refused
// again, and the client gets 529; both are then marked, so the next
// request is the frontend's own 529 without reaching either. Once the
// streams end, the marks expire by themselves after the cooldown (1 s)
// and a request is served.
func TestFrontendOverloaded(t *testing.T) {
	dir := buildFleet(t)
	_, line := runEnginesim(t, "fleet engine", "--listen", "127.0.0.1:0", "--max-num-seqs", "4")
	var eng struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &eng); err != nil {
		t.Fatal(err)
	}
	var workers []string
	var sidecars []*sidecar
	for i := range 2 {
		sg := start(t, "http://"+eng.Addr, nil, "--engine-request-limit", "1", "--request-queue-limit", "0")
		sidecars = append(sidecars, sg)
		workers = append(workers, "--worker", fmt.Sprintf("name=w%d,proxy=%s,admin=%s", i, sg.proxy, sg.admin))
	}
	url := frontendProc(t, dir, append(workers, "--retries", "1", "--cooldown", "1s")...)
	eventually(t, "both workers fresh", func() bool {
		return strings.Count(fmt.Sprint(frontendStats(t, url)["workers"]), "state:fresh") == 2
	})

	// Hold each worker's one slot with a long stream sent to it directly.
	ctx, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	held := make(chan result, 2)
	for _, sg := range sidecars {
		go func() {
			held <- post(ctx, http.DefaultClient, sg.proxy, "hold", `{"model":"sim-model","prompt":"hold","max_tokens":4000,"stream":true}`)
		}()
		eventually(t, "the slot held", func() bool { return sg.metric("dynamo_engine_request") == 1 })
	}

	body := `{"model":"sim-model","prompt":"hi","max_tokens":1}`
	if r := post(context.Background(), http.DefaultClient, url, "first", body); r.status != 529 {
		t.Fatalf("first request: %d %q, want the second worker's 529", r.status, r.body)
	}
	checkFrontendRefusal(t, post(context.Background(), http.DefaultClient, url, "second", body), 529, "Server overloaded: worker at capacity")
	st := frontendStats(t, url)
	if st["worker_529"] != 2.0 || st["absorbed_529"] != 1.0 || st["client_529"] != 2.0 {
		t.Errorf("stats %v: want 2 workers' 529s, 1 absorbed, 2 sent to clients", st)
	}
	for _, sg := range sidecars {
		if got := sg.metric("dynamo_rejection_request_total"); got != 1 {
			t.Errorf("a slotgate refused %v requests, want 1: the second request must not reach it", got)
		}
	}

	stopStreams()
	for range sidecars {
		<-held
	}
	refusedAt := time.Now()
	eventually(t, "a request served once the marks expired", func() bool {
		return post(context.Background(), http.DefaultClient, url, "later", body).status == http.StatusOK
	})
	if waited := time.Since(refusedAt); waited > 5*time.Second {
		t.Errorf("served %s after the streams ended; the 1 s marks should have expired long before", waited)
	}
}
