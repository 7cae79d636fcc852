package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusalsOnAKeptConnection: with the one slot held and no queue, a
// client that keeps its connection and is refused again and again (the
// refusals after its first are answered by the listener, before net/http
// reads them) gets each time the same 529 as the first, with its own id,
// on the same connection, in order behind a request served; the refusals
// are counted and logged one for one; the proxy port's /metrics is still
// served, and bad requests are still refused as bad, not as overloaded;
// and once the slot is free the same connection is served.
func TestRefusalsOnAKeptConnection(t *testing.T) {
	full := holdTheSlot(t, "--serve-engine-metrics=true", "--passthrough-paths", "/health")
	sg, c, br := full.sg, full.c, full.br
	const refusals = 30
	for i := range refusals {
		id := fmt.Sprintf("kept-%d", i)
		writeRaw(t, c, completion(id))
		resp, body := readKept(t, br)
		if resp.StatusCode != 529 || resp.Header.Get("X-Request-Id") != id || resp.Header.Get("Retry-After") != "2" ||
			resp.Header.Get("X-Slotgate-Reason") != "capacity" || resp.Close || resp.Header.Get("Date") == "" {
			t.Fatalf("refusal %d: %s %v", i, resp.Status, resp.Header)
		}
		if e := decodeError(t, body); e.Error.Message != overloadMessage || e.Error.Code != 529 {
			t.Fatalf("refusal %d: body %s", i, body)
		}
	}
	// The proxy port's /metrics is served in front of the proxy (here not
	// a passthrough path too): an endpoint picker reads it most when the
	// worker is full.
	writeRaw(t, c, "GET /metrics HTTP/1.1\r\nHost: slotgate\r\n\r\n")
	if resp, body := readKept(t, br); resp.StatusCode == 529 || resp.Header.Get("X-Slotgate-Reason") != "" {
		t.Errorf("GET /metrics on the proxy port, while overloaded: %s %v %s", resp.Status, resp.Header, body)
	}
	for name, raw := range map[string]string{
		"two lengths":      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"bad header value": "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\n{}",
		"no Host":          "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
	} {
		if status := badRequestOnKeptConn(t, sg.proxy, raw); status != http.StatusBadRequest {
			t.Errorf("%s, while overloaded: %d, want 400", name, status)
		}
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != refusals+3 {
		t.Errorf("dynamo_rejection_request_total = %v, want %d (one per refusal)", got, refusals+3)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_capacity"); got != refusals+3 {
		t.Errorf("slotgate_requests_total{outcome=rejected_capacity} = %v, want %d", got, refusals+3)
	}
	eventually(t, "an access-log line per refusal", func() bool {
		return len(sg.log.Lines(`"outcome":"rejected_capacity"`)) >= refusals+3
	})
	if got := len(sg.log.Lines(`"outcome":"rejected_capacity"`)); got != refusals+3 {
		t.Errorf("%d access-log lines of rejected_capacity, want %d", got, refusals+3)
	}

	full.release()
	writeRaw(t, c, completion("served")+completion("behind"))
	for _, id := range []string{"served", "behind"} {
		// The test engine names the request's id in its answer.
		if resp, body := readKept(t, br); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"`+id+`"`) {
			t.Errorf("after the release, %s: %s %v %s", id, resp.Status, resp.Header, body)
		}
	}
}

// heldSlot is a slotgate of one slot, no queue and --retry-after 2s,
// whose slot a holder's request takes, with a kept connection open to its
// proxy port (c, read through br); release frees the slot, once the
// holder was served.
type heldSlot struct {
	sg      *sidecar
	c       net.Conn
	br      *bufio.Reader
	release func()
}

// holdTheSlot starts such a slotgate, with args added to its flags.
func holdTheSlot(t *testing.T, args ...string) heldSlot {
	t.Helper()
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, append([]string{"--engine-request-limit", "1", "--request-queue-limit", "0", "--retry-after", "2s"}, args...)...)
	held := make(chan result, 1)
	go func() {
		held <- post(context.Background(), &http.Client{}, sg.proxy, "holder", `{"prompt":"hi"}`)
	}()
	eng.waitInFlight(t, 1)
	c, err := net.Dial("tcp", strings.TrimPrefix(sg.proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	release := func() {
		t.Helper()
		eng.release()
		if r := <-held; r.status != http.StatusOK {
			t.Fatalf("the held request: %d %s", r.status, r.body)
		}
	}
	return heldSlot{sg: sg, c: c, br: bufio.NewReader(c), release: release}
}

// badRequestOnKeptConn sends one good request and then raw on one
// connection (so that raw is not the connection's first), and returns
// raw's status.
func badRequestOnKeptConn(t *testing.T, proxyURL, raw string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(proxyURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	br := bufio.NewReader(c)
	writeRaw(t, c, completion("first"))
	if resp, _ := readKept(t, br); resp.StatusCode != 529 {
		t.Fatalf("first request: %s", resp.Status)
	}
	writeRaw(t, c, raw)
	resp, _ := readKept(t, br)
	return resp.StatusCode
}

func completion(id string) string {
	body := `{"prompt":"hi"}`
	return fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\nContent-Type: application/json\r\n"+
		"X-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
}

func writeRaw(t *testing.T, c net.Conn, raw string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
}

// readKept reads one answer from a kept connection, body included.
func readKept(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
