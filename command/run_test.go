package command_test

import (
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/command"
)

// noLeaks fails the test if a goroutine started after the goroutines
// that opts ignore (goleak.IgnoreCurrent) still runs once eng is closed.
// Closing the engine first ends the connections slotgate keeps to it, idle
// ones included, which the engine owns as much as slotgate does;
// everything else Run started must have ended.
func noLeaks(t *testing.T, eng *engine, opts ...goleak.Option) {
	t.Helper()
	eng.close()
	goleak.VerifyNone(t, opts...)
}

// lateAccessLine ignores the access log's flush goroutine where Run
// returns without waiting for the requests it cut (a second signal, the
// shutdown timeout): their handlers write their access lines after Run
// stopped the access log, and when such a line is the first one, zap's
// BufferedWriteSyncer starts a flush goroutine that nobody stops (a known
// gap: Run does not wait for the handlers http.Server.Close cut).
var lateAccessLine = goleak.IgnoreTopFunction("go.uber.org/zap/zapcore.(*BufferedWriteSyncer).flushLoop")

// TestRunDrainsCleanly: after a signal and the drain delay, new requests
// are refused with 503 draining while the request in flight still runs;
// Run waits for it, then returns 0, with nothing left running.
func TestRunDrainsCleanly(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "50ms", "--shutdown-timeout", "10m")
	inflight := sendAsync(sg.proxy+"/v1/completions", "hold-1")
	eng.waitArrived(t)

	sg.signal(syscall.SIGTERM)
	sg.log.WaitFor(t, "new requests are now refused with 503", waitLimit)
	late := post(sg.proxy, "late")
	if late.status != http.StatusServiceUnavailable || !strings.Contains(late.body, "Server unavailable: draining") {
		t.Errorf("a request during the drain: status %d body %q err %v, want 503 draining", late.status, late.body, late.err)
	}
	if got := late.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q while draining, want 1", got)
	}
	if sg.returned() {
		t.Fatalf("Run returned %d with a request still in flight", sg.code)
	}

	eng.unblock()
	if r := receive(t, inflight); r.status != http.StatusOK || r.body != `{"id":"hold-1"}` {
		t.Errorf("the request in flight: status %d body %q err %v, want 200 from the engine", r.status, r.body, r.err)
	}
	if code := sg.wait(); code != 0 {
		t.Errorf("Run returned %d after a clean drain, want 0", code)
	}
	command.NoneRunning(t)
	sg.log.WaitFor(t, "drained: exiting", waitLimit)
	noLeaks(t, eng, ignore)
}

// TestRunServesDuringDrainDelay: a signal fails readiness at once, but new
// requests are still served during the drain delay, while endpoints
// update; a second signal then ends Run at once with 1, its ports closed.
func TestRunServesDuringDrainDelay(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "1h")
	sg.signal(syscall.SIGTERM)
	sg.log.WaitFor(t, "readiness now fails", waitLimit)
	if status, body := get(t, sg.admin+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz while draining: %d %q, want 503 draining", status, body)
	}
	if r := post(sg.proxy, "early"); r.status != http.StatusOK {
		t.Errorf("a request within the drain delay: status %d body %q err %v, want 200", r.status, r.body, r.err)
	}

	sg.signal(syscall.SIGINT)
	if code := sg.wait(); code != 1 {
		t.Errorf("Run returned %d after a second signal, want 1", code)
	}
	sg.log.WaitFor(t, "second signal: exiting now", waitLimit)
	for _, addr := range []string{sg.proxy, sg.admin} {
		if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "http://"), waitLimit); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Run returned", addr)
		}
	}
	noLeaks(t, eng, ignore)
}

// TestRunSecondSignalDuringShutdown: while Run waits for a request still
// in flight, a second signal ends it at once with 1, cutting the request,
// however long --shutdown-timeout is.
func TestRunSecondSignalDuringShutdown(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "0s", "--shutdown-timeout", "1h")
	inflight := sendAsync(sg.proxy+"/v1/completions", "hold-1")
	eng.waitArrived(t)
	sg.signal(syscall.SIGTERM)
	sg.log.WaitFor(t, "new requests are now refused with 503", waitLimit)

	sg.signal(syscall.SIGINT)
	if code := sg.wait(); code != 1 {
		t.Errorf("Run returned %d after a second signal, want 1", code)
	}
	sg.log.WaitFor(t, "second signal: exiting now", waitLimit)
	if r := receive(t, inflight); r.err == nil {
		t.Errorf("the request in flight got status %d %q, want its connection cut", r.status, r.body)
	}
	noLeaks(t, eng, ignore, lateAccessLine)
}

// TestRunShutdownTimeout: a request still running when --shutdown-timeout
// expires is cut, and Run returns 1 saying why: an admitted request, or a
// connection still open (a passthrough request holds no slot).
func TestRunShutdownTimeout(t *testing.T) {
	tests := []struct {
		name, path, log string
	}{
		{name: "request holding a slot", path: "/v1/completions",
			log: `"msg":"shutdown timeout: cutting requests still running","holding":1,"waiting":0`},
		{name: "passthrough request", path: "/v1/models",
			log: `"msg":"shutdown timeout: cutting connections still open"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			eng := newEngine(t)
			sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "0s", "--shutdown-timeout", "100ms")
			inflight := sendAsync(sg.proxy+tt.path, "hold-1")
			eng.waitArrived(t)
			began := time.Now()
			sg.signal(syscall.SIGTERM)
			if code := sg.wait(); code != 1 {
				t.Errorf("Run returned %d after the shutdown timeout, want 1", code)
			}
			if waited := time.Since(began); waited < 100*time.Millisecond {
				t.Errorf("Run returned %s after the signal, before the 100ms shutdown timeout", waited)
			}
			sg.log.WaitFor(t, tt.log, waitLimit)
			if r := receive(t, inflight); r.err == nil {
				t.Errorf("the request in flight got status %d %q, want its connection cut", r.status, r.body)
			}
			noLeaks(t, eng, ignore, lateAccessLine)
		})
	}
}
