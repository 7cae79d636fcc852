package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// simProcess is enginesim as a real process that a test can kill -9 and
// start again on the same HTTP port, as a crashed engine's supervisor does.
type simProcess struct {
	enginesimProcess
	addr     string    // host:port, kept across restarts
	listened time.Time // when the current process's listening line was seen
}

func startSimProcess(t *testing.T) *simProcess {
	t.Helper()
	e := &simProcess{enginesimProcess: enginesimProcess{t: t}, addr: "127.0.0.1:0"}
	e.run()
	return e
}

func (e *simProcess) url() string { return "http://" + e.addr }

func (e *simProcess) run() {
	e.t.Helper()
	var line string
	e.enginesimProcess, line = runEnginesim(e.t, e.addr, "--listen", e.addr, "--log-level", "info")
	e.listened = time.Now()
	var l struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Addr == "" {
		e.t.Fatalf("enginesim listening line %q: %v", line, err)
	}
	e.addr = l.Addr
}

// outageSlots and outageQueue are N and Q in TestEngineKilledAndRestarted.
const outageSlots, outageQueue = 4, 4

// TestEngineKilledAndRestarted: enginesim is killed with SIGKILL while
// streams run, and started again on the same port. The streams end with
// an error at the client and free their slots; during the outage requests
// get 503 "engine unreachable" at once and /readyz is 503; after the
// restart /readyz and requests come back within a second, and a burst of
// N+Q is admitted in full.
func TestEngineKilledAndRestarted(t *testing.T) {
	eng := startSimProcess(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", fmt.Sprint(outageSlots),
		"--request-queue-limit", fmt.Sprint(outageQueue), "--log-level", "info")
	eventually(t, "readiness", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusOK })
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()

	// Streams of about 25 s hold every slot when the engine dies.
	cut := startStreams(ctx, sg.proxy, outageSlots, 4000)
	eventually(t, "the streams to hold every slot", func() bool { return sg.metric("dynamo_engine_request") == outageSlots })
	eng.kill()
	for range outageSlots {
		r := <-cut.results
		if r.err == nil {
			t.Errorf("a stream cut by the engine's death ended without an error at the client: status %d, %d bytes",
				r.status, len(r.body))
		}
	}
	eventually(t, "the dead engine's requests to free their slots", func() bool {
		return sg.metric("dynamo_engine_request") == 0 && sg.metric("dynamo_request_queue") == 0
	})

	checkOutage(t, ctx, sg)

	eng.run()
	toReady, toOK := recovery(t, ctx, sg, eng.listened)
	if toReady > time.Second || toOK > time.Second {
		t.Errorf("after the engine listened: /readyz 200 in %s, first 200 in %s; want both within 1s", toReady, toOK)
	}
	t.Logf("engine listening to /readyz 200: %s; to the first 200: %s", toReady.Round(time.Millisecond), toOK.Round(time.Millisecond))

	checkBurst(t, ctx, sg)
}

// checkOutage: with the engine dead, requests get 503 engine unreachable
// promptly, and /readyz turns 503.
func checkOutage(t *testing.T, ctx context.Context, sg *sidecar) {
	t.Helper()
	for i := range 5 {
		sent := time.Now()
		r := post(ctx, http.DefaultClient, sg.proxy, fmt.Sprintf("outage-%d", i), streamBody(4))
		took := time.Since(sent)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("request %d during the outage: status %d err %v body %q, want 503", i, r.status, r.err, r.body)
		}
		if e := decodeError(t, r.body); e.Error.Message != "Server unavailable: engine unreachable" {
			t.Errorf("outage error %+v", e.Error)
		}
		if took > 2*time.Second {
			t.Errorf("request %d during the outage took %s, want a prompt refusal", i, took)
		}
	}
	eventually(t, "/readyz to fail", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusServiceUnavailable })
	if s, body := get(t, sg.admin+"/readyz"); s != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d %q", s, body)
	}
}

// recovery polls /readyz and sends requests every 10 ms from now, and
// returns how long after since each first succeeded.
func recovery(t *testing.T, ctx context.Context, sg *sidecar, since time.Time) (toReady, toOK time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	poll := func(ok func() bool, took *time.Duration) {
		defer wg.Done()
		for ctx.Err() == nil {
			if ok() {
				*took = time.Since(since)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wg.Add(2)
	go poll(func() bool {
		resp, err := http.Get(sg.admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, &toReady)
	go poll(func() bool {
		return post(ctx, http.DefaultClient, sg.proxy, "recovery", streamBody(4)).status == http.StatusOK
	}, &toOK)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("no recovery after the engine restarted: %v", ctx.Err())
	}
	return toReady, toOK
}

// checkBurst: N+Q requests at once, each long enough to overlap, are all
// admitted: no slot is still held for the dead engine's requests.
func checkBurst(t *testing.T, ctx context.Context, sg *sidecar) {
	t.Helper()
	burst := startStreams(ctx, sg.proxy, outageSlots+outageQueue, 300)
	eventually(t, "the burst to fill slots and queue", func() bool {
		f := sg.scrape()
		return metricValue(f, "dynamo_engine_request") == outageSlots && metricValue(f, "dynamo_request_queue") == outageQueue
	})
	for range outageSlots + outageQueue {
		if why := complete(<-burst.results); why != "" {
			t.Errorf("burst request after recovery: %s", why)
		}
	}
	f := sg.scrape()
	if in, q := metricValue(f, "dynamo_engine_request"), metricValue(f, "dynamo_request_queue"); in != 0 || q != 0 {
		t.Errorf("after the burst: %v in flight, %v queued, want 0 and 0", in, q)
	}
	if r := metricValue(f, "dynamo_rejection_request_total"); r != 0 {
		t.Errorf("%v requests refused as over capacity, want none", r)
	}
}
