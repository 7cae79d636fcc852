package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestClosedLoopAtCapacity: exactly N+Q clients, each sending its next
// streamed request the moment it has read its last answer to the end, on
// a kept connection or a new one each time. A client that has its answer
// finds its slot free, on every path (the relay hands it on as it reads
// the engine's end, before the client has that end), so none of them is
// ever refused: N+Q clients never ask for more than N+Q places at once.
func TestClosedLoopAtCapacity(t *testing.T) {
	t.Parallel()
	const slots, queue, each = 2, 2, 25
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprint("kept=", kept), func(t *testing.T) {
			t.Parallel()
			eng := startEnginesim(t, "--speedup-ratio", "10")
			sg := start(t, eng, nil, "--engine-request-limit", fmt.Sprint(slots), "--request-queue-limit", fmt.Sprint(queue))
			var wg sync.WaitGroup
			for c := range slots + queue {
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !kept}}
				defer client.CloseIdleConnections()
				wg.Go(func() {
					for i := range each {
						r := post(t.Context(), client, sg.proxy, fmt.Sprintf("c%d-%d", c, i), streamBody(3))
						if why := complete(r); why != "" {
							t.Errorf("client %d, request %d of %d back to back: %s", c, i, each, why)
							return
						}
					}
				})
			}
			wg.Wait()
			if r := sg.metric("dynamo_rejection_request_total"); r > 0 {
				t.Errorf("%v requests refused as over capacity, want none", r)
			}
		})
	}
}

// sessionGateYAML allows one request in flight per session, and a
// session's next request a millisecond's wait at most before it is
// refused as "session busy".
const sessionGateYAML = `request_classifier:
  type: session-gate
  parameters:
    max_active_per_session: 1
    max_wait_ms: 1
session_header: x-session-id
`

// TestSessionBackToBack: under a session gate of one request a session,
// a session's client that sends its next streamed request the moment it
// has read the last one to the end, on a kept connection or a new one
// each time, is served every time: the relayed request's completion
// reaches the policy (gate.EngineFinished delivers it, before the client
// has the answer's end: TestEngineFinishedHandsTheSlotOn and
// TestOnEndComesBeforeTheClientHasTheEnd), or the session would stay busy
// and the next request be refused after the policy's millisecond.
func TestSessionBackToBack(t *testing.T) {
	t.Parallel()
	const each = 40
	path := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(path, []byte(sessionGateYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	eng := startEnginesim(t, "--speedup-ratio", "10")
	sg := start(t, eng, nil, "--engine-request-limit", "4", "--request-queue-limit", "4", "--admission-config", path)
	for _, kept := range []bool{true, false} {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !kept}}
		defer client.CloseIdleConnections()
		for i := range each {
			r := postHeaders(t.Context(), client, sg.proxy, fmt.Sprintf("kept=%v-%d", kept, i), streamBody(3),
				http.Header{"X-Session-Id": {"agent-1"}})
			if why := complete(r); why != "" {
				t.Fatalf("kept=%v, request %d of %d back to back in one session: %s", kept, i, each, why)
			}
		}
	}
}
