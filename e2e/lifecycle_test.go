package e2e_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestDrainOnSIGTERM: SIGTERM fails readiness at once; new requests are
// served during the drain delay, refused with 503 draining after it; the
// request in flight and the one queued finish; then slotgate exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "1s", "--shutdown-timeout", "20s")
	eventually(t, "readiness", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusOK })
	inflight := make(chan result, 1)
	go func() { inflight <- post(context.Background(), http.DefaultClient, sg.proxy, "inflight", "{}") }()
	eng.waitInFlight(t, 1)

	sg.signal(syscall.SIGTERM)
	eventually(t, "readiness to fail", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusServiceUnavailable })
	// Within the drain delay a new request is still accepted (it queues).
	queued := make(chan result, 1)
	go func() { queued <- post(context.Background(), http.DefaultClient, sg.proxy, "queued", "{}") }()
	eventually(t, "the new request to queue", func() bool { return sg.metric("dynamo_request_queue") == 1 })

	sg.log.WaitFor(t, "new requests are now refused", waitLimit)
	r := post(context.Background(), http.DefaultClient, sg.proxy, "late", "{}")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("after the drain delay: status %d, want 503", r.status)
	}
	if e := decodeError(t, r.body); e.Error.Message != "Server unavailable: draining" {
		t.Errorf("draining message %q", e.Error.Message)
	}
	eng.release()
	for name, ch := range map[string]chan result{"in flight": inflight, "queued": queued} {
		if got := <-ch; got.status != http.StatusOK {
			t.Errorf("%s request: status %d err %v", name, got.status, got.err)
		}
	}
	if code := sg.wait(); code != 0 {
		t.Errorf("exit status %d after a clean drain, want 0", code)
	}
	if got := len(sg.log.Lines(`"outcome":"rejected_draining"`)); got != 1 {
		t.Errorf("%d rejected_draining lines, want 1", got)
	}
}

// TestDrainEndpoint: POST /drain, for a preStop hook, returns at once and
// fails readiness while the process keeps running; SIGTERM then ends it.
func TestDrainEndpoint(t *testing.T) {
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "2", "--drain-delay", "0s")
	resp, err := http.Post(sg.admin+"/drain", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /drain: status %d, want 202", resp.StatusCode)
	}
	if s, body := get(t, sg.admin+"/readyz"); s != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz after /drain: %d %q", s, body)
	}
	eventually(t, "new requests to be refused", func() bool {
		return post(context.Background(), http.DefaultClient, sg.proxy, "x", "{}").status == http.StatusServiceUnavailable
	})
	if s, _ := get(t, sg.admin+"/livez"); s != http.StatusOK {
		t.Errorf("/livez while draining: %d, want 200", s)
	}
	sg.signal(syscall.SIGTERM)
	if code := sg.wait(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}

// TestSecondSignalExitsAtOnce: with a request still running, a second
// signal ends the process without waiting for it.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--drain-delay", "0s", "--shutdown-timeout", "10m")
	go post(context.Background(), http.DefaultClient, sg.proxy, "stuck", "{}")
	eng.waitInFlight(t, 1)
	sg.signal(syscall.SIGTERM)
	sg.log.WaitFor(t, "new requests are now refused", waitLimit)
	sg.signal(syscall.SIGINT)
	if code := sg.wait(); code == 0 {
		t.Errorf("exit status 0 after a forced exit, want non-zero")
	}
	sg.log.WaitFor(t, "second signal", waitLimit)
}

// TestH2C: the proxy port speaks cleartext HTTP/2 as well as HTTP/1.1.
func TestH2C(t *testing.T) {
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "2")
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{
		Protocols: &protocols,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Err: tls.AlertError(0)} // never TLS here
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sg.proxy+"/v1/completions", strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Errorf("status %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
}

// TestBodyTooLarge: a declared body over the limit gets 413 without taking
// a slot or reaching the engine.
func TestBodyTooLarge(t *testing.T) {
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--max-request-body-bytes", "64")
	r := post(context.Background(), http.DefaultClient, sg.proxy, "big", strings.Repeat("x", 65))
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", r.status)
	}
	if _, _, seen, _ := eng.stats(); len(seen) != 0 {
		t.Errorf("the engine saw %v", seen)
	}
	if r := post(context.Background(), http.DefaultClient, sg.proxy, "small", strings.Repeat("x", 64)); r.status != http.StatusOK {
		t.Errorf("a body at the limit: status %d", r.status)
	}
}
