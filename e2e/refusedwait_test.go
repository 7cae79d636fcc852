package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusedClientWaitsInTheRelay: a kept connection refused again and
// again waits in the stream relay between its requests
// (slotgate_relay_idle_connections), where its next refusals are answered
// the same as the listener's, in order, one for one in the metrics and
// the access log. Requests the relay's loop does not answer whole (two
// sent at once, one whose body comes late) and the first the gate admits
// send the connection back to the server, which answers them on it.
func TestRefusedClientWaitsInTheRelay(t *testing.T) {
	full := holdTheSlot(t)
	sg, c, br := full.sg, full.c, full.br
	refused := 0
	refuse := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			resp, body := readKept(t, br)
			if resp.StatusCode != 529 || resp.Header.Get("X-Request-Id") != id || resp.Header.Get("Retry-After") != "2" || resp.Close {
				t.Fatalf("%s: %s %v %s", id, resp.Status, resp.Header, body)
			}
			if e := decodeError(t, body); e.Error.Message != overloadMessage {
				t.Fatalf("%s: body %s", id, body)
			}
			refused++
		}
	}
	waits := func(when string) {
		t.Helper()
		eventually(t, "the connection to wait in the relay "+when, func() bool {
			return sg.metric("slotgate_relay_idle_connections") == 1
		})
	}
	run := func(prefix string) {
		t.Helper()
		for i := range 6 {
			id := fmt.Sprintf("%s-%d", prefix, i)
			writeRaw(t, c, completion(id))
			refuse(id)
		}
	}

	run("first")
	waits("after a run of refusals")
	run("waiting")
	writeRaw(t, c, completion("pipelined-1")+completion("pipelined-2"))
	refuse("pipelined-1", "pipelined-2")
	run("again")
	waits("after the pipelined requests")
	raw := completion("split")
	cut := strings.Index(raw, "\r\n\r\n") + 4
	writeRaw(t, c, raw[:cut])
	time.Sleep(50 * time.Millisecond) // the head alone reaches the loop
	writeRaw(t, c, raw[cut:])
	refuse("split")
	run("last")
	waits("before the slot frees")

	if got := sg.metric("dynamo_rejection_request_total"); got != float64(refused) {
		t.Errorf("dynamo_rejection_request_total = %v, want %d (one per refusal)", got, refused)
	}
	eventually(t, "an access-log line per refusal", func() bool {
		return len(sg.log.Lines(`"outcome":"rejected_capacity"`)) >= refused
	})
	if got := len(sg.log.Lines(`"outcome":"rejected_capacity"`)); got != refused {
		t.Errorf("%d access-log lines of rejected_capacity, want %d", got, refused)
	}
	full.release()
	writeRaw(t, c, completion("served"))
	if resp, body := readKept(t, br); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"served"`) {
		t.Errorf("after the release: %s %v %s", resp.Status, resp.Header, body)
	}
	eventually(t, "the served connection out of the relay", func() bool {
		return sg.metric("slotgate_relay_idle_connections") == 0
	})
}
