package proxy_test

import (
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// earlyCases are requests that RefuseEarly answers, as raw HTTP/1.1.
var earlyCases = []struct{ name, raw string }{
	{"POST with a body and an id", "POST /v1/completions HTTP/1.1\r\nHost: slotgate:8080\r\nContent-Type: application/json\r\n" +
		"X-Request-Id: client-7\r\nContent-Length: 13\r\n\r\n{\"prompt\":\"\"}"},
	{"GET with a query", "GET /v1/work?ms=50&x=y HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"},
	{"names in any case, the id padded", "POST /a HTTP/1.1\r\nhOsT: x\r\ncontent-length: 2\r\nx-request-id: \t padded \t\r\n" +
		"User-Agent: curl/8.5\r\nAccept: */*\r\n\r\n{}"},
	{"the first id of two", "POST /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: one\r\nX-Request-Id: two\r\nContent-Length: 0\r\n\r\n"},
	{"no id", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
	{"an id too long to keep", "POST /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + strings.Repeat("i", gate.MaxClientRequestID+1) +
		"\r\nContent-Length: 0\r\n\r\n"},
}

// madeUpIDLine matches the line of an id slotgate made up, whose number
// differs between two answers.
var (
	madeUpIDLine = regexp.MustCompile(`X-Request-Id: [0-9a-f]{12}-[0-9]+\r\n`)
	dateLine     = regexp.MustCompile(`Date: [^\r]*\r\n`)
)

// TestRefuseEarlyMatchesServeHTTP sends each request to a real net/http
// server in front of the proxy, whose one slot is held and whose queue
// has no room, then asks RefuseEarly for the same head: the two answers
// must be the same bytes but for the Date (and a made-up id's number),
// and the refusals counted, reported and logged the same.
func TestRefuseEarlyMatchesServeHTTP(t *testing.T) {
	for _, conf := range []struct {
		name   string
		limits limiter.Options
		opts   func(*proxy.Options)
		gate   func(*gate.Options)
	}{
		{name: "529 and Retry-After", opts: func(o *proxy.Options) { o.RetryAfter = 2 * time.Second }},
		{name: "503 without Retry-After", opts: func(o *proxy.Options) { o.OverloadStatus = http.StatusServiceUnavailable }},
		{name: "busy", gate: func(o *gate.Options) { o.Busy = func() bool { return true } }},
		{name: "under token limits", limits: limiter.Options{PrefillTokenLimit: 1000, QueueTokenLimit: 10000}},
	} {
		t.Run(conf.name, func(t *testing.T) {
			held := newHeldEngine()
			conf.limits.Slots = 1
			h := newHarness(t, harnessConfig{engine: held, limits: conf.limits, options: conf.opts,
				gate: conf.gate, wrap: proxy.Strict})
			defer held.release()
			if conf.gate == nil {
				h.hold(held, "/hold")
			}
			for _, tc := range earlyCases {
				t.Run(tc.name, func(t *testing.T) {
					compareEarly(t, h, tc.raw)
				})
			}
		})
	}
}

// compareEarly refuses raw once through net/http and once early.
func compareEarly(t *testing.T, h *harness, raw string) {
	t.Helper()
	before := h.obs.snapshot()
	logged := len(h.access.All())
	served := answerOf(t, h, raw)
	afterServed := h.obs.snapshot()

	head := raw[:strings.Index(raw, "\r\n\r\n")+4]
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	early, ok := h.proxy.RefuseEarly([]byte(head), addr, nil)
	if !ok {
		t.Fatalf("RefuseEarly did not answer; net/http answered:\n%s", served)
	}
	norm := func(b []byte) string {
		b = dateLine.ReplaceAll(b, []byte("Date: (date)\r\n"))
		return string(madeUpIDLine.ReplaceAll(b, []byte("X-Request-Id: (made up)\r\n")))
	}
	if norm(early) != norm(served) {
		t.Errorf("early answer:\n%q\nnet/http's:\n%q", early, served)
	}
	if !dateLine.Match(early) {
		t.Errorf("early answer has no Date: %q", early)
	}
	if got, want := diff(h.obs.snapshot().done, afterServed.done), diff(afterServed.done, before.done); !maps.Equal(got, want) {
		t.Errorf("outcomes of the early refusal %v, of net/http's %v", got, want)
	}
	lines := h.accessLines()[logged:]
	if len(lines) != 2 {
		t.Fatalf("%d access-log lines, want 2 (net/http's, the early one)", len(lines))
	}
	for _, k := range []string{"method", "path", "proto", "status", "outcome", "bytes_in", "bytes_out", "queue_wait"} {
		if lines[0][k] != lines[1][k] {
			t.Errorf("access log %s: %v early, %v through net/http", k, lines[1][k], lines[0][k])
		}
	}
	if lines[1]["client"] != addr.String() {
		t.Errorf("access log client %v, want %s", lines[1]["client"], addr)
	}
}

// answerOf sends raw on a new connection and returns the answer's bytes,
// once the exchange was reported.
func answerOf(t *testing.T, h *harness, raw string) []byte {
	t.Helper()
	got := rawAnswer(t, strings.TrimPrefix(h.url(""), "http://"), raw)
	waitFor(t, "net/http's refusal to be reported", func() bool { return len(h.access.All()) > 0 })
	return got
}

// diff is a less b, key by key, leaving out the keys that did not change.
func diff(a, b map[string]int) map[string]int {
	d := make(map[string]int)
	for k, v := range a {
		if v != b[k] {
			d[k] = v - b[k]
		}
	}
	return d
}

// TestRefuseEarlyLeavesTheRest: every request RefuseEarly does not know
// to be a plain refusal goes to net/http, the gate untouched; so do all
// requests while the gate has room.
func TestRefuseEarlyLeavesTheRest(t *testing.T) {
	held := newHeldEngine()
	h := newHarness(t, harnessConfig{engine: held, limits: limiter.Options{Slots: 1},
		options: func(o *proxy.Options) {
			o.PassthroughPaths = []string{"/health"}
			o.FrontPaths = []string{"/metrics"}
			o.MaxRequestBodyBytes = 100
		}})
	defer held.release()
	const ok = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
	if _, answered := h.proxy.RefuseEarly([]byte(ok), nil, nil); answered {
		t.Fatal("answered a request with a slot free")
	}
	h.hold(held, "/hold")
	if _, answered := h.proxy.RefuseEarly([]byte(ok), &net.TCPAddr{}, nil); !answered {
		t.Fatal("the plain request was not answered: the cases below would prove nothing")
	}
	tests := []struct{ name, head string }{
		{"HEAD", "HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"PUT", "PUT /a HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"HTTP/1.0", "POST /a HTTP/1.0\r\nHost: x\r\n\r\n"},
		{"HTTP/2 shape", "PRI * HTTP/2.0\r\n\r\n"},
		{"two spaces", "POST  /a HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"absolute form", "POST http://x/a HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"authority-like path", "POST //x/a HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"percent-encoded path", "POST /a%20b HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"fragment", "POST /a#b HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"non-ASCII target", "POST /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"passthrough path", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"a path served in front", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"no Host", "POST /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n"},
		{"two Hosts", "POST /a HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n"},
		{"empty Host", "POST /a HTTP/1.1\r\nHost:\r\n\r\n"},
		{"odd Host", "POST /a HTTP/1.1\r\nHost: x@y\r\n\r\n"},
		{"Connection", "POST /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"Expect", "POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"},
		{"chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"Upgrade", "GET /a HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n"},
		{"HTTP2-Settings", "GET /a HTTP/1.1\r\nHost: x\r\nHTTP2-Settings: AAA\r\n\r\n"},
		{"a rank", "POST /a HTTP/1.1\r\nHost: x\r\n" + proxy.RankHeader + ": 1\r\n\r\n"},
		{"the listener's stand-in", "POST /a HTTP/1.1\r\nHost: x\r\n" + proxy.RefusedHeader + ": 400 bad_request x\r\n\r\n"},
		{"gRPC", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc+proto\r\n\r\n"},
		{"two Content-Lengths", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n"},
		{"signed Content-Length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n"},
		{"body over the limit", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n"},
		{"control byte in a value", "POST /a HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"},
		{"non-ASCII value", "POST /a HTTP/1.1\r\nHost: x\r\nX-A: \xc3\xa9\r\n\r\n"},
		{"bad name", "POST /a HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n"},
		{"no colon", "POST /a HTTP/1.1\r\nHost: x\r\nXA\r\n\r\n"},
		{"folded line", "POST /a HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"},
		{"bare LF", "POST /a HTTP/1.1\nHost: x\r\n\r\n"},
		{"head not whole", "POST /a HTTP/1.1\r\nHost: x\r\n"},
		{"bytes after the head", ok + "{}"},
	}
	before := h.lim.Stats()
	logged := len(h.access.All())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ans, answered := h.proxy.RefuseEarly([]byte(tc.head), &net.TCPAddr{}, nil); answered || len(ans) > 0 {
				t.Errorf("answered %q", ans)
			}
		})
	}
	if after := h.lim.Stats(); after.RejectedFull != before.RejectedFull {
		t.Errorf("refusals counted: %d, then %d", before.RejectedFull, after.RejectedFull)
	}
	if n := len(h.access.All()); n != logged {
		t.Errorf("%d access-log lines written", n-logged)
	}
}

// BenchmarkRefuseEarly: what the listener's offer costs a request the
// gate admits (declined: a slot free) and one it refuses (the slot held,
// no queue).
func BenchmarkRefuseEarly(b *testing.B) {
	head := []byte(benchRequest[:strings.Index(benchRequest, "\r\n\r\n")+4])
	benchRefusal(b, func(p *proxy.Proxy, addr net.Addr, buf []byte) bool {
		_, ok := p.RefuseEarly(head, addr, buf)
		return ok
	})
}

// benchRequest is the plain request the refusal benchmarks offer.
const benchRequest = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\n" +
	"Content-Length: 2\r\nAccept-Encoding: gzip\r\n\r\n{}"

// benchRefusal measures offer, which reports whether it refused, on a
// proxy of one slot, free (declined) and held (refused), the access log
// off; and refused with the access log on, as the program writes it
// (JSON, batched, here to nowhere).
func benchRefusal(b *testing.B, offer func(p *proxy.Proxy, addr net.Addr, buf []byte) bool) {
	addr := proxy.NewClientAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}) // as the listener gives it
	for _, tc := range []struct {
		name            string
		refused, logged bool
	}{{"declined", false, false}, {"refused", true, false}, {"refused and logged", true, true}} {
		refused := tc.refused
		b.Run(tc.name, func(b *testing.B) {
			access := (*zap.Logger)(nil)
			if tc.logged {
				log, stop, err := logging.Buffered("slotgate", "info", "json", io.Discard, 256<<10, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = stop() })
				access = log.Named("access")
			}
			held := newHeldEngine()
			h := newHarness(b, harnessConfig{engine: held, limits: limiter.Options{Slots: 1},
				options: func(o *proxy.Options) { o.AccessLog = access }})
			defer held.release()
			if refused {
				h.hold(held, "/hold")
			}
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				if ok := offer(h.proxy, addr, buf); ok != refused {
					b.Fatalf("answered %v, want %v", ok, refused)
				}
			}
		})
	}
}
