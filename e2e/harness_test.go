package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/internal/testlog"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// binDir holds the binaries built by TestMain; binary is slotgate's.
var binDir, binary string

// commands are the programs TestMain builds, all with the race detector
// when the tests run with it.
var commands = []string{"slotgate", "enginesim", "slotgate-loadgen", "slotgate-demo"}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	binDir, binary = dir, filepath.Join(dir, "slotgate")
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	for _, c := range commands {
		args = append(args, "../cmd/"+c)
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build the commands:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitLimit bounds every wait in these tests. It is generous: the machines
// are shared and slow, and nothing here measures time.
const waitLimit = 30 * time.Second

// sidecar is one running slotgate process.
type sidecar struct {
	t        *testing.T
	cmd      *exec.Cmd
	proxy    string // base URL of the proxy port
	admin    string // base URL of the admin port
	grpc     string // host:port of the gRPC admin port
	log      *testlog.Buffer
	exited   chan struct{}
	exitCode int
}

// start runs slotgate with env added to a minimal environment and args
// after the test defaults (loopback ports chosen by the kernel, debug logs).
// It returns once slotgate logged its listening addresses.
func start(t *testing.T, engineURL string, env map[string]string, args ...string) *sidecar {
	t.Helper()
	s := launch(t, engineURL, env, args...)
	addrs := s.log.WaitFor(t, `"msg":"listening"`, waitLimit)
	var line struct{ Proxy, Admin, GRPC string }
	if err := json.Unmarshal([]byte(addrs), &line); err != nil {
		t.Fatalf("parse listening line %q: %v", addrs, err)
	}
	s.proxy, s.admin, s.grpc = "http://"+line.Proxy, "http://"+line.Admin, line.GRPC
	return s
}

// launch starts the process without waiting for it to listen.
func launch(t *testing.T, engineURL string, env map[string]string, args ...string) *sidecar {
	t.Helper()
	base := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "127.0.0.1:0",
		"--log-level", "debug"}
	if engineURL != "" {
		base = append(base, "--engine-url", engineURL)
	}
	cmd := exec.Command(binary, append(base, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if relay := os.Getenv("SLOTGATE_E2E_STREAM_RELAY"); relay != "" {
		// The whole suite on one stream path (epoll, the default on
		// Linux, or off): a test's own setting, below, still wins.
		cmd.Env = append(cmd.Env, "SLOTGATE_STREAM_RELAY="+relay)
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &sidecar{t: t, cmd: cmd, log: testlog.New(), exited: make(chan struct{})}
	cmd.Stderr = s.log
	cmd.Stdout = s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start slotgate: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		s.exitCode = cmd.ProcessState.ExitCode()
		s.log.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
		if strings.Contains(s.log.String(), "WARNING: DATA RACE") {
			t.Errorf("slotgate reported a data race:\n%s", s.log.String())
		}
		if t.Failed() {
			t.Logf("slotgate output:\n%s", s.log.String())
		}
	})
	return s
}

func (s *sidecar) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to exit and returns its exit status.
func (s *sidecar) wait() int {
	s.t.Helper()
	select {
	case <-s.exited:
		return s.exitCode
	case <-time.After(waitLimit):
		s.t.Fatalf("slotgate did not exit within %s", waitLimit)
		return -1
	}
}

// scrape reads the admin port's metrics.
func (s *sidecar) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := http.Get(s.admin + "/metrics")
	if err != nil {
		s.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("parse metrics: %v", err)
	}
	return fams
}

// metric returns the value of the series of name whose labels include
// labels (name=value pairs), or -1 when there is none.
func (s *sidecar) metric(name string, labels ...string) float64 {
	s.t.Helper()
	return metricValue(s.scrape(), name, labels...)
}

func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	fam, ok := fams[name]
	if !ok {
		return -1
	}
	// Summed over the series that match, as Prometheus's sum() does:
	// slotgate_requests_total{outcome} has a series per protocol.
	sum, found := 0.0, false
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	if !found {
		return -1
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// eventually polls cond until it holds, failing after waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: waitLimit, Every: 5 * time.Millisecond}.True(t, what, cond)
}

// get sends a GET and returns status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// result is what a client saw.
type result struct {
	status int
	header http.Header
	body   string
	err    error
}

// post sends a completion request with id as X-Request-Id.
func post(ctx context.Context, client *http.Client, url, id, body string) result {
	return postHeaders(ctx, client, url, id, body, nil)
}

// postHeaders is post with more headers: a session's, a priority's.
func postHeaders(ctx context.Context, client *http.Client, url, id, body string, more http.Header) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	for k, vv := range more {
		req.Header[k] = vv
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// errorJSON is OpenAI's error shape as slotgate writes it.
type errorJSON struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, body string) errorJSON {
	t.Helper()
	var e errorJSON
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	return e
}
