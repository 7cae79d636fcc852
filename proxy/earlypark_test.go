package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// earlyParked is a request the front end parks when it would wait.
const earlyParked = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: parked-1\r\nContent-Type: application/json\r\n" +
	"Content-Length: 18\r\n\r\n{\"prompt\":\"wait\"}\n"

// queueOfOne is a proxy with one slot, taken (holder, released when the
// test ends if not before), and one place in the queue, in front of
// earlyEngine, with the relay; options adjusts the proxy's options.
func queueOfOne(t *testing.T, options func(*proxy.Options)) (h *harness, eng *earlyEngine, holder *limiter.Permit) {
	t.Helper()
	eng = &earlyEngine{}
	h = newRelayHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 1}, options: options})
	holder, err := h.lim.TryAcquire(limiter.Request{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Release)
	return h, eng, holder
}

// offerParked offers earlyParked to AnswerEarly on a real connection, and
// returns what the front end did and the client's end.
func offerParked(t *testing.T, h *harness) (proxy.Early, net.Conn, *bufio.Reader) {
	t.Helper()
	client, server := loopback.Pair(t)
	_ = client.SetDeadline(time.Now().Add(bound))
	head, body, _ := strings.Cut(earlyParked, "\r\n\r\n")
	e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), lendingClient{server})
	if e.Lent == nil || !e.Lent.Parks() {
		t.Fatalf("AnswerEarly: %+v, want the request parked (lent)", e)
	}
	return e, client, bufio.NewReader(client)
}

// TestAnswerEarlyParks: a request that would wait is parked by the front
// end itself, from its bytes (Early.Lent, Parks): its place in the queue
// is held from then on, so the next request is refused at once; started
// (as the listener starts it once net/http let go of the connection), it
// waits in the queue, and once a slot frees it reaches the engine as the
// client sent it and is answered on its connection through net/http,
// which then serves the client's next request.
func TestAnswerEarlyParks(t *testing.T) {
	h, eng, holder := queueOfOne(t, nil)
	e, client, br := offerParked(t, h)
	if !e.Answered || e.Gone || e.Handed != nil {
		t.Fatalf("AnswerEarly: %+v, want the request answered by its parking", e)
	}
	// Its place is held before it is queued: the next request is refused.
	c := newRawClient()
	if next := h.proxy.AnswerEarly([]byte("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"), nil, c); !next.Answered ||
		!strings.HasPrefix(c.String(), "HTTP/1.1 529 ") {
		t.Errorf("with the queue's place held: AnswerEarly %+v, wrote %q; want a 529", next, c.String())
	}
	e.Lent.Start(true)
	h.waitStats("the request queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	if eng.count() != 0 {
		t.Fatal("the engine got the request before it had a slot")
	}
	holder.Release()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "hello there") {
		t.Fatalf("parked request answered %d %q %v", resp.StatusCode, b, resp.Header)
	}
	if got := eng.last(); got.uri != "/v1/completions" || got.body != "{\"prompt\":\"wait\"}\n" || got.header.Get("X-Request-Id") != "parked-1" {
		t.Errorf("the engine got %+v", got)
	}
	s := h.waitDone(2)
	if s.done["admitted_queued"] != 1 || s.done["rejected_capacity"] != 1 {
		t.Errorf("outcomes %v, want one admitted_queued and one rejected_capacity", s.done)
	}
	if _, err := io.WriteString(client, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil {
		t.Fatalf("the next request on the connection: %v", err)
	} else {
		_ = resp.Body.Close()
	}
	h.waitStats("every slot back", func(s limiter.Stats) bool { return s.Holding == 0 && s.Waiting == 0 })
}

// TestAnswerEarlyParkedClientLeaves: a client that hangs up while its
// request is parked leaves the queue at once (cancelled_queued), its
// request never reaching the engine.
func TestAnswerEarlyParkedClientLeaves(t *testing.T) {
	h, eng, _ := queueOfOne(t, nil)
	e, client, _ := offerParked(t, h)
	e.Lent.Start(true)
	h.waitStats("the request queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	_ = client.Close()
	h.waitOutcome("cancelled_queued")
	h.waitStats("the queue empty", func(s limiter.Stats) bool { return s.Waiting == 0 })
	if eng.count() != 0 {
		t.Error("a request whose client left reached the engine")
	}
	// The line follows the outcome's report.
	waitFor(t, "the access-log line", func() bool {
		lines := h.accessLines()
		return len(lines) > 0 && lines[len(lines)-1]["request_id"] == "parked-1"
	})
	lines := h.accessLines()
	if last := lines[len(lines)-1]; last["status"] != int64(499) || last["request_id"] != "parked-1" || last["path"] != "/v1/completions" {
		t.Errorf("the access-log line: %v", last)
	}
}

// TestAnswerEarlyLeavesParkingToNetHTTP: the front end parks a request
// only where it can hold its body and watch its client: a body over the
// budget for bodies held in memory, or a connection that cannot be lent,
// goes to net/http with its place held, as before.
func TestAnswerEarlyLeavesParkingToNetHTTP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		lend   bool
	}{
		{name: "over the body budget", budget: 4, lend: true},
		{name: "no connection to lend", lend: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := queueOfOne(t, func(o *proxy.Options) { o.MaxBufferedBodyBytes = tc.budget })
			head, body, _ := strings.Cut(earlyParked, "\r\n\r\n")
			var c proxy.EarlyClient = newRawClient()
			if tc.lend {
				_, server := loopback.Pair(t)
				c = lendingClient{server}
			}
			e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), c)
			if e.Answered || e.Lent != nil || e.Handed == nil {
				t.Fatalf("AnswerEarly: %+v, want it handed to net/http", e)
			}
			e.Handed.Abandon()
			if s := h.lim.Stats(); s.Waiting != 0 {
				t.Errorf("%d waiting after the hand-on was abandoned", s.Waiting)
			}
		})
	}
}
