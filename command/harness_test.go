package command_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/command"
	"github.com/slotgate/slotgate/internal/testlog"
)

// waitLimit bounds every wait in these tests. It is generous: CI has two
// cores and runs the race detector, and nothing here measures time.
const waitLimit = 20 * time.Second

// client sends the tests' requests. Without keep-alives it leaves no idle
// connection, and so no goroutine, behind a finished request.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: waitLimit}

// engine is an inference engine that answers at once, except requests
// whose X-Request-Id starts with "hold": those wait until release is
// closed or their caller leaves. /health is always 200.
type engine struct {
	srv       *httptest.Server
	arrived   chan string   // the id of each held request, as it arrives
	release   chan struct{} // closed by unblock
	unblockMu sync.Once
	closeMu   sync.Once
}

func newEngine(t *testing.T) *engine {
	t.Helper()
	e := &engine{arrived: make(chan string, 16), release: make(chan struct{})}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.close)
	return e
}

func (e *engine) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	id := r.Header.Get("X-Request-Id")
	if strings.HasPrefix(id, "hold") {
		select {
		case e.arrived <- id:
		case <-r.Context().Done():
			return
		}
		select {
		case <-e.release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q}`, id)
}

func (e *engine) url() string { return e.srv.URL }

// waitArrived waits for the next held request to reach the engine.
func (e *engine) waitArrived(t *testing.T) string {
	t.Helper()
	select {
	case id := <-e.arrived:
		return id
	case <-time.After(waitLimit):
		t.Fatalf("no held request reached the engine within %s", waitLimit)
		return ""
	}
}

// unblock lets every held request answer, now and later.
func (e *engine) unblock() { e.unblockMu.Do(func() { close(e.release) }) }

// close unblocks the held requests and stops the engine, closing its
// connections; it returns once every handler has.
func (e *engine) close() {
	e.unblock()
	e.closeMu.Do(e.srv.Close)
}

// sidecar is one call of command.Run, in a goroutine of the test's.
type sidecar struct {
	t                  *testing.T
	proxy, admin, grpc string // base URLs of the proxy and admin ports; host:port of gRPC
	stdout, log        *testlog.Buffer
	signals            chan os.Signal
	exited             chan struct{} // closed when Run has returned
	code               int           // Run's result, once exited is closed
}

// start runs slotgate in front of engineURL on loopback ports the kernel
// chooses, with args after those defaults, and returns once it logged its
// addresses.
func start(t *testing.T, engineURL string, env map[string]string, args ...string) *sidecar {
	t.Helper()
	base := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "127.0.0.1:0",
		"--engine-url", engineURL, "--engine-metrics-dialect", "none", "--log-format", "json"}
	s := launch(t, env, append(base, args...)...)
	line := s.log.WaitFor(t, `"msg":"listening"`, waitLimit)
	var addrs struct{ Proxy, Admin, GRPC string }
	if err := json.Unmarshal([]byte(line), &addrs); err != nil {
		t.Fatalf("parse the listening line %q: %v", line, err)
	}
	s.proxy, s.admin, s.grpc = "http://"+addrs.Proxy, "http://"+addrs.Admin, addrs.GRPC
	return s
}

// launch calls command.Run with exactly args and env. The test's cleanup
// ends a Run still going with two signals, and waits for it.
func launch(t *testing.T, env map[string]string, args ...string) *sidecar {
	t.Helper()
	s := &sidecar{t: t, stdout: testlog.New(), log: testlog.New(), signals: make(chan os.Signal, 2), exited: make(chan struct{})}
	opts := command.Options{Version: "v-test", Commit: "c-test"}
	go func() {
		s.code = command.Run(opts, args, env, s.stdout, s.log, s.signals)
		s.log.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("slotgate's output:\n%s%s", s.stdout.String(), s.log.String())
		}
	})
	return s
}

// stop ends Run if it still runs: the second signal makes it return at once.
func (s *sidecar) stop() {
	deadline := time.After(waitLimit)
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	for {
		var next chan<- os.Signal // nil, so never chosen, once both are sent
		var sig os.Signal
		if len(sigs) > 0 {
			next, sig = s.signals, sigs[0]
		}
		select {
		case <-s.exited:
			return
		case <-deadline:
			s.t.Errorf("Run did not return within %s of two signals", waitLimit)
			return
		case next <- sig:
			sigs = sigs[1:]
		}
	}
}

// signal sends sig to Run.
func (s *sidecar) signal(sig os.Signal) {
	s.t.Helper()
	select {
	case s.signals <- sig:
	case <-time.After(waitLimit):
		s.t.Fatalf("Run did not take signal %v within %s", sig, waitLimit)
	}
}

// wait waits for Run to return and returns its exit status.
func (s *sidecar) wait() int {
	s.t.Helper()
	select {
	case <-s.exited:
		return s.code
	case <-time.After(waitLimit):
		s.t.Fatalf("Run did not return within %s", waitLimit)
		return -1
	}
}

// returned reports whether Run has returned.
func (s *sidecar) returned() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// result is what a client saw.
type result struct {
	status int
	header http.Header
	body   string
	err    error
}

// post sends a completion request to base with id as its X-Request-Id.
func post(base, id string) result {
	return send(base+"/v1/completions", id)
}

// send POSTs an empty JSON object to url with id as its X-Request-Id.
func send(url, id string) result {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// sendAsync is send in a goroutine; the channel gets its result.
func sendAsync(url, id string) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- send(url, id) }()
	return ch
}

// receive waits for a result from sendAsync.
func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("no answer within %s", waitLimit)
		return result{}
	}
}

// get sends a GET and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
