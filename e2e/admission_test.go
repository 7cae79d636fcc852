package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

const overloadMessage = "Server overloaded: worker at capacity"

// TestExactCapacity is the acceptance test: with N=3 and Q=2, 40
// concurrent slow requests give exactly 5 successes and 35 immediate 529s,
// the engine never sees more than 3 at once, and Dynamo's metrics read 3, 2
// and 35 while the engine is saturated.
func TestExactCapacity(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), map[string]string{
		"DYN_ENGINE_REQUEST_LIMIT":       "3",
		"DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "2",
	})
	const clients = 40
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	results := make(chan result, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			results <- post(context.Background(), client, sg.proxy, fmt.Sprintf("req-%d", i), `{"prompt":"hi"}`)
		})
	}
	// The 35 refusals come back while the engine still holds 3 and 2 wait.
	var refused []result
	for len(refused) < clients-5 {
		r := <-results
		if r.err != nil {
			t.Fatalf("request failed: %v", r.err)
		}
		if r.status != 529 {
			t.Fatalf("got status %d (%s) before the engine released anything", r.status, r.body)
		}
		refused = append(refused, r)
	}
	eng.waitInFlight(t, 3)
	fams := sg.scrape()
	for name, want := range map[string]float64{
		"dynamo_engine_request": 3, "dynamo_request_queue": 2, "dynamo_rejection_request_total": 35,
	} {
		if got := metricValue(fams, name); got != want {
			t.Errorf("%s = %v while saturated, want %v", name, got, want)
		}
	}
	for _, r := range refused {
		checkOverload(t, r, 529, overloadMessage)
	}
	eng.release()
	wg.Wait()
	close(results)
	ok := 0
	for r := range results {
		if r.status != http.StatusOK {
			t.Errorf("after release: status %d, body %s", r.status, r.body)
		}
		ok++
	}
	if ok != 5 {
		t.Errorf("%d requests succeeded, want exactly 5", ok)
	}
	_, maxIn, seen, _ := eng.stats()
	if maxIn != 3 || len(seen) != 5 {
		t.Errorf("engine saw %d requests, at most %d at once; want 5 and 3", len(seen), maxIn)
	}
	fams = sg.scrape()
	for name, want := range map[string]float64{
		"dynamo_engine_request": 0, "dynamo_request_queue": 0, "dynamo_rejection_request_total": 35,
	} {
		if got := metricValue(fams, name); got != want {
			t.Errorf("%s = %v after the burst, want %v", name, got, want)
		}
	}
	for outcome, want := range map[string]float64{
		"admitted_direct": 3, "admitted_queued": 2, "rejected_capacity": 35,
	} {
		if got := metricValue(fams, "slotgate_requests_total", "outcome", outcome); got != want {
			t.Errorf("slotgate_requests_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	// The access log is written in batches, at least every second.
	eventually(t, "an access-log line per request", func() bool {
		return len(sg.log.Lines(`"msg":"request"`)) >= clients
	})
	if got := len(sg.log.Lines(`"msg":"request"`)); got != clients {
		t.Errorf("%d access-log lines, want one per request (%d)", got, clients)
	}
}

// checkOverload checks a capacity or queue-timeout answer.
func checkOverload(t *testing.T, r result, status int, message string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After header on an overload answer")
	}
	e := decodeError(t, r.body)
	if e.Error.Message != message || e.Error.Type != "Overloaded" || e.Error.Code != status {
		t.Errorf("error body %+v, want message %q, type Overloaded, code %d", e.Error, message, status)
	}
}

// TestPassThroughWithoutLimit: with no engine limit nothing is queued or
// refused, and every request reaches the engine at once.
func TestPassThroughWithoutLimit(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), map[string]string{"DYN_DYNAMO_REQUEST_QUEUE_LIMIT": "not-even-a-number"})
	const clients = 30
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	results := make(chan result, clients)
	for i := range clients {
		wg.Go(func() { results <- post(context.Background(), client, sg.proxy, fmt.Sprint("p", i), "{}") })
	}
	eng.waitInFlight(t, clients)
	if got := sg.metric("dynamo_engine_request"); got != clients {
		t.Errorf("dynamo_engine_request = %v, want %d", got, clients)
	}
	eng.release()
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("status %d err %v", r.status, r.err)
		}
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != 0 {
		t.Errorf("dynamo_rejection_request_total = %v, want 0", got)
	}
	if got := sg.metric("slotgate_engine_request_limit"); got != 0 {
		t.Errorf("slotgate_engine_request_limit = %v, want 0 (no cap)", got)
	}
}

// TestQueueTimeout: a request that waits longer than --queue-timeout gets
// the overload status with the queue-timeout message.
func TestQueueTimeout(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--queue-timeout", "200ms")
	holder := make(chan result, 1)
	go func() { holder <- post(context.Background(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	eng.waitInFlight(t, 1)
	r := post(context.Background(), http.DefaultClient, sg.proxy, "waiter", "{}")
	checkOverload(t, r, 529, "Server overloaded: request rejected after exceeding the backend admission queue delay")
	eng.release()
	if h := <-holder; h.status != http.StatusOK {
		t.Errorf("holder: status %d", h.status)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_queue_expired"); got != 1 {
		t.Errorf("rejected_queue_timeout = %v, want 1", got)
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != 0 {
		t.Errorf("a queue timeout counted as a capacity rejection: %v", got)
	}
	_, _, seen, _ := eng.stats()
	if strings.Join(seen, ",") != "holder" {
		t.Errorf("engine saw %v, want only the holder", seen)
	}
}

// TestPassthroughPathsTakeNoSlot: engine probes go through even when every
// slot and queue place is taken.
func TestPassthroughPathsTakeNoSlot(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--request-queue-limit", "2")
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { post(context.Background(), http.DefaultClient, sg.proxy, fmt.Sprint("h", i), "{}") })
	}
	eventually(t, "a full queue", func() bool { return sg.metric("dynamo_request_queue") == 2 })
	if status, _ := get(t, sg.proxy+"/health"); status != http.StatusOK {
		t.Errorf("/health through a full proxy: status %d, want 200", status)
	}
	if got := post(context.Background(), http.DefaultClient, sg.proxy, "refused", "{}"); got.status != 529 {
		t.Errorf("a completion with everything full: status %d, want 529", got.status)
	}
	eng.release()
	wg.Wait()
}
