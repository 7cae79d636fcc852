package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// TestAnswerWaiting: the relay's loop refuses, as the listener's early
// refusal does, exactly one whole request the front end answers early,
// and leaves everything else to the server, the gate untouched: a head
// or a body not all here, bytes past the request, a head the front end
// does not answer, and any request while the gate has room.
func TestAnswerWaiting(t *testing.T) {
	held := newHeldEngine()
	h := newHarness(t, harnessConfig{engine: held, limits: limiter.Options{Slots: 1},
		options: func(o *proxy.Options) { o.FrontPaths = []string{"/metrics"} }})
	defer held.release()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	plain := earlyCases[0].raw
	if ans, ok := h.proxy.AnswerWaiting([]byte(plain), addr, nil); ok || len(ans) > 0 {
		t.Fatalf("answered %q with a slot free", ans)
	}
	h.hold(held, "/hold")
	for _, tc := range earlyCases {
		t.Run(tc.name, func(t *testing.T) {
			head := tc.raw[:len(tc.raw)-len(bodyOf(tc.raw))]
			want, ok := h.proxy.RefuseEarly([]byte(head), addr, nil)
			if !ok {
				t.Fatal("RefuseEarly did not answer: the case proves nothing")
			}
			got, ok := h.proxy.AnswerWaiting([]byte(tc.raw), addr, []byte("kept:"))
			norm := func(b []byte) string {
				return string(madeUpIDLine.ReplaceAll(dateLine.ReplaceAll(b, []byte("Date: (date)\r\n")), []byte("X-Request-Id: (made up)\r\n")))
			}
			if !ok || norm(got) != "kept:"+norm(want) {
				t.Errorf("AnswerWaiting: %v\n%q\nwant the early refusal after what out held:\n%q", ok, got, want)
			}
		})
	}
	before := h.lim.Stats()
	logged := len(h.access.All())
	for _, tc := range []struct{ name, req string }{
		{"head not whole", plain[:len(plain)-len(bodyOf(plain))-2]},
		{"body not whole", plain[:len(plain)-1]},
		{"a byte past the body", plain + "P"},
		{"two requests", plain + plain},
		{"a path served in front", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"Connection: close", "POST /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"},
		{"chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"not HTTP", "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ans, ok := h.proxy.AnswerWaiting([]byte(tc.req), addr, nil); ok || len(ans) > 0 {
				t.Errorf("answered %q", ans)
			}
		})
	}
	// A drain closes connections: the loop leaves even a request it would
	// refuse to net/http, whose answer closes the connection.
	h.proxy.CloseConnections()
	if ans, ok := h.proxy.AnswerWaiting([]byte(plain), addr, nil); ok || len(ans) > 0 {
		t.Errorf("closing: answered %q", ans)
	}
	if after := h.lim.Stats(); after.RejectedFull != before.RejectedFull {
		t.Errorf("refusals counted: %d, then %d", before.RejectedFull, after.RejectedFull)
	}
	if n := len(h.access.All()); n != logged {
		t.Errorf("%d access-log lines written", n-logged)
	}
}

// bodyOf is what follows a raw request's head.
func bodyOf(raw string) string {
	for i := range len(raw) - 3 {
		if raw[i:i+4] == "\r\n\r\n" {
			return raw[i+4:]
		}
	}
	return ""
}

// FuzzAnswerWaiting: whatever a waiting client sends, the loop refuses
// only what net/http reads as exactly one request, its body whole and
// nothing after it, answering a 529 after what out held; anything else it
// leaves with out as it was and no refusal counted.
func FuzzAnswerWaiting(f *testing.F) {
	held := newHeldEngine()
	h := newHarness(f, harnessConfig{engine: held, limits: limiter.Options{Slots: 1}})
	f.Cleanup(held.release)
	h.hold(held, "/hold")
	for _, tc := range earlyCases {
		f.Add([]byte(tc.raw))
	}
	f.Add([]byte(earlyCases[0].raw + earlyCases[1].raw))
	f.Add([]byte("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n{}"))
	f.Fuzz(func(t *testing.T, req []byte) {
		before := h.lim.Stats().RejectedFull
		out, ok := h.proxy.AnswerWaiting(req, &net.TCPAddr{}, []byte("kept:"))
		refused := h.lim.Stats().RejectedFull - before
		if !ok {
			if string(out) != "kept:" || refused != 0 {
				t.Fatalf("left %q, yet out is %q and %d refusals were counted", req, out, refused)
			}
			return
		}
		if !bytes.HasPrefix(out, []byte("kept:HTTP/1.1 529 ")) || refused != 1 {
			t.Fatalf("answered %q with %q, %d refusals counted", req, out, refused)
		}
		br := bufio.NewReader(bytes.NewReader(req))
		r, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("answered %q, which net/http does not read: %v", req, err)
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil || br.Buffered() > 0 {
			t.Fatalf("answered %q: its body %v, %d bytes after it", req, err, br.Buffered())
		}
	})
}

// BenchmarkAnswerWaiting: what the relay's loop spends on a waiting
// client's request beyond its read and write: one the gate admits
// (declined: the connection goes back) and one it refuses.
func BenchmarkAnswerWaiting(b *testing.B) {
	req := []byte(benchRequest)
	benchRefusal(b, func(p *proxy.Proxy, addr net.Addr, out []byte) bool {
		_, ok := p.AnswerWaiting(req, addr, out)
		return ok
	})
}
