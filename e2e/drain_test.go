package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// These tests drain slotgate with a hundred SSE streams from enginesim in
// flight. TestDrainOnSIGTERM (lifecycle_test.go) scripts the drain with
// one held request; these check that it holds at scale, with real streams.

// drainStreams is how many streams are live when the drain begins; the
// engine limit equals it, so every one holds a slot.
const drainStreams = 100

// noExitSleep makes a race-enabled slotgate exit as soon as it returns:
// the race detector otherwise sleeps a second at exit (atexit_sleep_ms),
// which would count in the exit times measured here.
var noExitSleep = map[string]string{"GORACE": "atexit_sleep_ms=0"}

// streamBody asks enginesim for exactly tokens streamed tokens.
func streamBody(tokens int) string {
	return fmt.Sprintf(`{"model":"sim-model","prompt":"drain me","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
}

// streams runs n streaming completions at once and reports each result on
// the returned channel, buffered for all of them; ended counts those over.
type streams struct {
	results chan result
	ended   atomic.Int64
	lastEnd atomic.Int64 // UnixNano of the latest end
}

func startStreams(ctx context.Context, url string, n, tokens int) *streams {
	s := &streams{results: make(chan result, n)}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for i := range n {
		go func() {
			r := post(ctx, client, url, fmt.Sprintf("stream-%d", i), streamBody(tokens))
			s.lastEnd.Store(time.Now().UnixNano())
			s.ended.Add(1)
			s.results <- r
		}()
	}
	return s
}

// complete reports why r is not a whole SSE stream, or "" when it is: a
// 200 whose last event is [DONE], after a chunk that finished on length.
func complete(r result) string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case r.status != http.StatusOK:
		return fmt.Sprintf("status %d: %s", r.status, r.body)
	case !strings.HasSuffix(r.body, "data: [DONE]\n\n"):
		return fmt.Sprintf("no [DONE] at the end (%d bytes): ...%s", len(r.body), r.body[max(0, len(r.body)-200):])
	case !strings.Contains(r.body, `"finish_reason":"length"`):
		return "no chunk finished on length"
	}
	return ""
}

// TestDrainHundredStreams: SIGTERM with 100 live streams. Every stream ends
// with [DONE] within the shutdown timeout; a request sent during the drain
// delay is still served (it queues behind the streams); one sent after it
// is refused at once with 503 draining; the process exits 0.
func TestDrainHundredStreams(t *testing.T) {
	const (
		// 400 tokens take about 2.5 s at enginesim's modelled speed,
		// longer than the drain delay: streams are live when refusals begin.
		tokens     = 400
		drainDelay = time.Second
		grace      = 25 * time.Second
	)
	eng := startEnginesim(t)
	sg := start(t, eng, noExitSleep, "--engine-request-limit", fmt.Sprint(drainStreams), "--request-queue-limit", "4",
		"--drain-delay", drainDelay.String(), "--shutdown-timeout", grace.String(), "--log-level", "info")
	eventually(t, "readiness", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusOK })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit+grace)
	defer cancel()
	live := startStreams(ctx, sg.proxy, drainStreams, tokens)
	eventually(t, "every stream to hold a slot", func() bool { return sg.metric("dynamo_engine_request") == drainStreams })

	sigterm := time.Now()
	sg.signal(syscall.SIGTERM)
	// Within the drain delay a new request is accepted: every slot is
	// taken, so it queues, and it is served once a stream ends.
	early := make(chan result, 1)
	go func() { early <- post(ctx, http.DefaultClient, sg.proxy, "early", streamBody(4)) }()
	eventually(t, "the early request to queue", func() bool { return sg.metric("dynamo_request_queue") == 1 })

	sg.log.WaitFor(t, "new requests are now refused", waitLimit)
	refusedAt := time.Since(sigterm)
	sent := time.Now()
	late := post(ctx, http.DefaultClient, sg.proxy, "late", streamBody(4))
	lateTook := time.Since(sent)
	if late.status != http.StatusServiceUnavailable {
		t.Fatalf("after the drain delay: status %d, want 503", late.status)
	}
	if e := decodeError(t, late.body); e.Error.Message != "Server unavailable: draining" || e.Error.Code != 503 {
		t.Errorf("draining error %+v", e.Error)
	}
	if n := live.ended.Load(); n != 0 {
		t.Fatalf("%d streams ended before refusals began: the streams are too short to test the drain", n)
	}

	for range drainStreams {
		if why := complete(<-live.results); why != "" {
			t.Errorf("stream cut by the drain: %s", why)
		}
	}
	streamsTook := time.Unix(0, live.lastEnd.Load()).Sub(sigterm)
	if why := complete(<-early); why != "" {
		t.Errorf("request queued during the drain delay: %s", why)
	}
	code := sg.wait()
	exitTook := time.Since(sigterm)
	if code != 0 {
		t.Errorf("exit status %d after a clean drain, want 0", code)
	}
	if exitTook > grace {
		t.Errorf("exited %s after SIGTERM, past the %s grace period", exitTook, grace)
	}
	t.Logf("SIGTERM to refusals %s, to the last [DONE] %s, to exit %s; a refused request took %s",
		refusedAt.Round(time.Millisecond), streamsTook.Round(time.Millisecond), exitTook.Round(time.Millisecond),
		lateTook.Round(time.Millisecond))
}

// TestDrainSecondSignalDuringDelay: a second signal while the drain delay
// still runs, with 100 streams live, ends the process at once with exit
// status 1 (exitFailed: the drain did not complete), cutting the streams.
// TestSecondSignalExitsAtOnce covers a second signal once refusals began.
func TestDrainSecondSignalDuringDelay(t *testing.T) {
	// 4000 tokens stream for about 25 s: far longer than "at once".
	const tokens, atOnce = 4000, 5 * time.Second
	eng := startEnginesim(t)
	sg := start(t, eng, noExitSleep, "--engine-request-limit", fmt.Sprint(drainStreams),
		"--drain-delay", "1m", "--shutdown-timeout", "10m", "--log-level", "info")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	live := startStreams(ctx, sg.proxy, drainStreams, tokens)
	eventually(t, "every stream to hold a slot", func() bool { return sg.metric("dynamo_engine_request") == drainStreams })

	sg.signal(syscall.SIGTERM)
	sg.log.WaitFor(t, "signal received: draining", waitLimit)
	second := time.Now()
	sg.signal(syscall.SIGINT)
	code := sg.wait()
	took := time.Since(second)
	if code != 1 {
		t.Errorf("exit status %d after a second signal, want 1", code)
	}
	if took > atOnce {
		t.Errorf("exited %s after the second signal, want at once (under %s)", took, atOnce)
	}
	if got := sg.log.Lines("second signal: exiting now"); len(got) != 1 || !strings.Contains(got[0], `"signal":"interrupt"`) {
		t.Errorf("second-signal log lines %q, want one naming the signal", got)
	}
	cut := 0
	for range drainStreams {
		if complete(<-live.results) != "" {
			cut++
		}
	}
	if cut != drainStreams {
		t.Errorf("%d of %d streams cut by the forced exit, want all", cut, drainStreams)
	}
	t.Logf("second signal to exit: %s", took.Round(time.Millisecond))
}
