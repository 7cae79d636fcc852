package deploy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// binDir holds slotgate and enginesim, built once per test binary from the
// parent module (..) and removed by TestMain.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// slotgateBins builds ../cmd/slotgate and ../cmd/enginesim (once) and
// returns the directory holding them.
func slotgateBins(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "slotgate-deploy-bin-")
		if binErr != nil {
			return
		}
		// Default build flags, so that the packages `go vet ./...` and
		// `go build ./...` of the parent module compiled come from the
		// build cache; only the settings and the metrics matter here.
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator),
			"./cmd/slotgate", "./cmd/enginesim")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/slotgate ./cmd/enginesim in ..: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// knownSettings are the flags and environment variables slotgate --help
// lists.
type knownSettings struct {
	flags map[string]bool // without the leading --
	env   map[string]bool
}

var (
	helpOnce sync.Once
	help     knownSettings
	helpErr  error
)

var (
	helpFlagRE = regexp.MustCompile(`(?m)^\s*--([a-z0-9][a-z0-9-]*)`)
	helpEnvRE  = regexp.MustCompile(`\b(?:SLOTGATE|DYN)_[A-Z0-9_]+\b`)
)

// slotgateHelp runs the built slotgate --help and collects the flag and
// variable names it lists.
func slotgateHelp(t *testing.T) knownSettings {
	t.Helper()
	dir := slotgateBins(t)
	helpOnce.Do(func() {
		out, err := exec.Command(filepath.Join(dir, "slotgate"), "--help").CombinedOutput()
		// --help may exit 0 or 2 (flag.ErrHelp); the text is what counts.
		if len(out) == 0 {
			helpErr = fmt.Errorf("slotgate --help printed nothing: %v", err)
			return
		}
		help = parseHelp(string(out))
		if len(help.flags) < 10 || len(help.env) < 10 {
			helpErr = fmt.Errorf("slotgate --help lists %d flags and %d variables; is its format changed?\n%s",
				len(help.flags), len(help.env), out)
		}
	})
	if helpErr != nil {
		t.Fatal(helpErr)
	}
	return help
}

func parseHelp(text string) knownSettings {
	k := knownSettings{flags: map[string]bool{}, env: map[string]bool{}}
	for _, m := range helpFlagRE.FindAllStringSubmatch(text, -1) {
		k.flags[m[1]] = true
	}
	for _, m := range helpEnvRE.FindAllString(text, -1) {
		k.env[m] = true
	}
	return k
}

// freePorts returns n distinct free TCP ports on 127.0.0.1: each is held
// until all are chosen, since a port closed may be given again at once.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// startProcess starts a binary, killed at the end of the test; its output
// goes to the test log when the test fails.
func startProcess(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var lines []string
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(pr)
		for s.Scan() {
			mu.Lock()
			if len(lines) < 200 {
				lines = append(lines, s.Text())
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		pw.Close()
		<-done
		if t.Failed() {
			mu.Lock()
			t.Logf("%s output:\n%s", filepath.Base(name), strings.Join(lines, "\n"))
			mu.Unlock()
		}
	})
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within %v: %s", url, d, last)
}

// scrapeNames fetches a Prometheus text exposition and returns every
// series name it can hold: each family's name, and for histograms and
// summaries the _bucket, _sum and _count series too.
func scrapeNames(url string) (map[string]bool, string, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return exposedNames(string(b)), string(b), nil
}

func exposedNames(text string) map[string]bool {
	names := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			name, typ := f[2], f[3]
			names[name] = true
			switch typ {
			case "histogram":
				names[name+"_bucket"] = true
				fallthrough
			case "summary":
				names[name+"_sum"] = true
				names[name+"_count"] = true
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// exportedMetrics runs enginesim and slotgate on free 127.0.0.1 ports,
// sends a few requests through, and returns the series names slotgate's
// admin /metrics and enginesim's /metrics expose.
func exportedMetrics(t *testing.T) (slotgate, engine map[string]bool) {
	t.Helper()
	dir := slotgateBins(t)
	ports := freePorts(t, 4)
	pe, pp, pa, pg := ports[0], ports[1], ports[2], ports[3]
	engineURL := fmt.Sprintf("http://127.0.0.1:%d", pe)
	startProcess(t, filepath.Join(dir, "enginesim"), "--listen", fmt.Sprintf("127.0.0.1:%d", pe),
		"--log-level", "warn", "--speedup-ratio", "100")
	if err := waitHTTP(engineURL+"/health", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	startProcess(t, filepath.Join(dir, "slotgate"),
		"--listen", fmt.Sprintf("127.0.0.1:%d", pp),
		"--admin-listen", fmt.Sprintf("127.0.0.1:%d", pa),
		"--admin-grpc-listen", fmt.Sprintf("127.0.0.1:%d", pg),
		"--engine-url", engineURL,
		"--engine-request-limit", "4", "--request-queue-limit", "4",
		"--log-level", "warn")
	admin := fmt.Sprintf("http://127.0.0.1:%d", pa)
	if err := waitHTTP(admin+"/readyz", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// Requests through the proxy, so that histograms and labelled series
	// have children.
	for range 3 {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/completions", pp), "application/json",
			strings.NewReader(`{"model":"sim-model","prompt":"hello","max_tokens":4}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Wait for the engine's load to be scraped (slotgate_worker_*).
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		slotgate, _, err = scrapeNames(admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if slotgate["slotgate_worker_kv_total_blocks"] || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	engine, _, err = scrapeNames(engineURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return slotgate, engine
}

// TestSlotgateBinaries checks the helpers above against the real binaries:
// --help names the settings the checks rely on, and /metrics exposes
// slotgate's families.
func TestSlotgateBinaries(t *testing.T) {
	h := slotgateHelp(t)
	for _, f := range []string{"engine-request-limit", "listen", "admin-listen", "admin-grpc-listen", "grpc-listen"} {
		if !h.flags[f] {
			t.Errorf("slotgate --help does not list --%s", f)
		}
	}
	for _, e := range []string{"DYN_DYNAMO_REQUEST_QUEUE_LIMIT", "SLOTGATE_LISTEN"} {
		if !h.env[e] {
			t.Errorf("slotgate --help does not list %s", e)
		}
	}
	names, engine := exportedMetrics(t)
	for _, n := range []string{"dynamo_request_queue", "slotgate_requests_total", "slotgate_queue_wait_seconds_bucket",
		"slotgate_time_to_first_byte_seconds_count", "slotgate_build_info"} {
		if !names[n] {
			t.Errorf("slotgate's /metrics has no %s", n)
		}
	}
	if len(engine) == 0 {
		t.Error("enginesim's /metrics exposes nothing")
	}
}
