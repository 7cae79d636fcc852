package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestStreamRelay runs slotgate in front of enginesim, with the stream
// relay (--stream-relay epoll, the default on Linux) and without it (off:
// net/http carries each stream): 8 clients send 4 streamed completions
// each, one after the other on a kept-alive connection. Every stream
// arrives whole, every later request reuses its connection (the relay
// gave it back to the server), the relay carried all 32 or, off, none,
// the engine never ran more than N, a request too long to be held whole
// is streamed to the engine and its answer relayed, and a client that
// leaves mid-stream frees its slot and the engine's request.
func TestStreamRelay(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"epoll", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			streamRelayRun(t, mode)
		})
	}
}

func streamRelayRun(t *testing.T, mode string) {
	eng := startEnginesim(t)
	sg := start(t, eng, map[string]string{"SLOTGATE_STREAM_RELAY": mode},
		"--engine-request-limit", "4", "--request-queue-limit", "28")
	const clients, each, tokens = 8, 4, 24
	body := fmt.Sprintf(`{"model":"sim-model","prompt":"hello","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
	var reused atomic.Int64
	var wg sync.WaitGroup
	var all []*http.Client
	for c := range clients {
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		all = append(all, client)
		wg.Go(func() {
			for i := range each {
				trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
					if info.Reused {
						reused.Add(1)
					}
				}}
				ctx := httptrace.WithClientTrace(t.Context(), trace)
				r := post(ctx, client, sg.proxy, fmt.Sprintf("c%d-%d", c, i), body)
				if r.err != nil || r.status != http.StatusOK || !strings.HasSuffix(r.body, "data: [DONE]\n\n") ||
					strings.Count(r.body, `"text"`) != tokens {
					t.Errorf("client %d, stream %d: %v, %d, %d text events; want 200, %d events and [DONE]:\n%s",
						c, i, r.err, r.status, strings.Count(r.body, `"text"`), tokens, r.body)
				}
			}
		})
	}
	wg.Wait()
	if n := reused.Load(); n != clients*(each-1) {
		t.Errorf("%d requests reused their connection, want %d: the relay gives a connection back after its answer", n, clients*(each-1))
	}
	wantRelayed := float64(clients * each)
	if mode == "off" {
		wantRelayed = -1 // no relay, no series
	}
	if n := sg.metric("slotgate_relay_streams_total"); n != wantRelayed {
		t.Errorf("slotgate_relay_streams_total = %v, want %v", n, wantRelayed)
	}
	if mode == "epoll" {
		// One more stream each, one client at a time: admitted at once,
		// each is served by the front end, and its client's connection,
		// idle after it, waits in the relay for the next request (a
		// stream queued above went through net/http, whose connection
		// went back to the server); a client that hangs up has it closed
		// there.
		for c, client := range all {
			if r := post(t.Context(), client, sg.proxy, fmt.Sprintf("c%d-last", c), body); r.status != http.StatusOK {
				t.Fatalf("client %d's last stream: %v, %d", c, r.err, r.status)
			}
		}
		eventually(t, "every client's connection idle in the relay", func() bool {
			return sg.metric("slotgate_relay_idle_connections") == clients
		})
		for _, client := range all {
			client.CloseIdleConnections()
		}
		eventually(t, "the idle connections closed", func() bool { return sg.metric("slotgate_relay_idle_connections") == 0 })

		// A long request (a 24 KiB prompt and a 64 KiB user field, more
		// than slotgate reads whole before forwarding) streams to the
		// engine as it is read: the engine gets it whole, and its answer
		// is relayed all the same.
		relayed := sg.metric("slotgate_relay_streams_total")
		longPrompt := fmt.Sprintf(`{"model":"sim-model","user":"%s","prompt":"%s","max_tokens":%d,"ignore_eos":true,"stream":true}`,
			strings.Repeat("u", 64<<10), strings.Repeat("w ", 12<<10), tokens)
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		if r := post(t.Context(), client, sg.proxy, "long-prompt", longPrompt); r.err != nil || r.status != http.StatusOK ||
			strings.Count(r.body, `"text"`) != tokens || !strings.HasSuffix(r.body, "data: [DONE]\n\n") {
			t.Errorf("the long prompt's stream: %v, %d, %d text events; want 200, %d events and [DONE]", r.err, r.status,
				strings.Count(r.body, `"text"`), tokens)
		}
		if n := sg.metric("slotgate_relay_streams_total"); n != relayed+1 {
			t.Errorf("slotgate_relay_streams_total went from %v to %v for the long prompt, want one more", relayed, n)
		}
	}
	engineMetric := func(name string) float64 { return metricValue(scrapeURL(t, eng+"/enginesim/metrics"), name) }
	if n := engineMetric("enginesim_requests_in_flight_max"); n > 4 {
		t.Errorf("the engine ran %v requests at once, more than N=4", n)
	}

	// A client that leaves mid-stream.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	long := `{"model":"sim-model","prompt":"hello","max_tokens":4000,"ignore_eos":true,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sg.proxy+"/v1/completions", strings.NewReader(long))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatalf("first event: %v", err)
	}
	cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
	eventually(t, "enginesim to see the abort", func() bool { return engineMetric("enginesim_requests_in_flight") == 0 })
	eventually(t, "the slot back", func() bool { return sg.metric("dynamo_engine_request") == 0 })
	if mode == "epoll" {
		eventually(t, "the relay empty", func() bool { return sg.metric("slotgate_relay_streams") == 0 })
	}
	if n := sg.metric("slotgate_requests_total", "outcome", "cancelled_running"); n != 1 {
		t.Errorf("slotgate_requests_total{outcome=cancelled_running} = %v, want 1", n)
	}
}
