package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// seenRequest is what an engine saw of a request.
type seenRequest struct {
	method, uri, host string
	header            http.Header
	body              string
}

// earlyEngine answers by path, and records every request with its
// body.
type earlyEngine struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (e *earlyEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.seen = append(e.seen, seenRequest{method: r.Method, uri: r.RequestURI, host: r.Host, header: r.Header.Clone(), body: string(b)})
	e.mu.Unlock()
	h := w.Header()
	switch r.URL.Path {
	case "/v1/completions":
		h.Set("Content-Type", "application/json")
		h.Set("X-Engine", "a")
		h.Add("X-Engine", "b")
		h.Set("Keep-Alive", "timeout=5") // hop-by-hop: never forwarded
		_, _ = io.WriteString(w, `{"choices":[{"text":"hello there"}],"usage":{"prompt_tokens":3,"completion_tokens":5}}`)
	case "/nodate":
		h["Date"] = nil
		h.Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "no date")
	case "/error":
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"bad"}}`)
	case "/empty":
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", "0")
	case "/chunked":
		h.Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, `{"chunked":true}`)
	case "/teapot":
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(599)
		_, _ = io.WriteString(w, "odd status")
	}
}

func (e *earlyEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seen)
}

func (e *earlyEngine) last() seenRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[len(e.seen)-1]
}

// rawClient is an early request's client: it keeps what the proxy writes.
// Its watch never starts: the client stays.
type rawClient struct {
	bytes.Buffer
	addr net.Addr
}

func newRawClient() *rawClient {
	return &rawClient{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}}
}

func (c *rawClient) RemoteAddr() net.Addr { return c.addr }

func (c *rawClient) Watch(time.Duration, proxy.Cutter) {}

func (c *rawClient) Unwatch() bool { return false }

// servedCases are requests AnswerEarly serves itself, and the fields of
// the engine's view that differ with the connection.
var servedCases = []struct{ name, raw string }{
	{"a completion", "POST /v1/completions HTTP/1.1\r\nHost: slotgate:8080\r\nContent-Type: application/json\r\n" +
		"X-Request-Id: client-7\r\nContent-Length: 15\r\n\r\n{\"prompt\":\"hi\"}"},
	{"forwarding and hop-by-hop fields", "POST /v1/completions?a=b&c HTTP/1.1\r\nhost: x\r\nConnection: keep-alive\r\n" +
		"Keep-Alive: timeout=9\r\nTE: gzip, trailers\r\nX-Forwarded-For: 10.0.0.1\r\nx-forwarded-for: 10.0.0.2, 10.0.0.3\r\n" +
		"X-Forwarded-Host: evil\r\nForwarded: for=1.2.3.4\r\nProxy-Authorization: secret\r\nUser-Agent: \r\n" +
		"Accept: */*\r\nAccept: text/plain\r\ncontent-length: 2\r\n\r\n{}"},
	{"a user agent, an idempotency key, no id", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8.5\r\n" +
		"Idempotency-Key: k1\r\nContent-Length: 2\r\n\r\n{}"},
	{"no Date from the engine", "GET /nodate HTTP/1.1\r\nHost: x\r\n\r\n"},
	{"an engine's error", "POST /error HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
	{"an empty answer", "POST /empty HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"},
	{"a status without text", "POST /teapot HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
}

// TestAnswerEarlyMatchesServeHTTP sends each request through a real
// net/http server in front of the proxy, then offers the same bytes to
// AnswerEarly: it must serve it itself, the client must get the same
// answer but for the Date, the engine the same request but for the id
// slotgate made up, and the outcome, token counts and access-log line
// must be the same.
func TestAnswerEarlyMatchesServeHTTP(t *testing.T) {
	eng := &earlyEngine{}
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 4}, wrap: proxy.Strict,
		options: func(o *proxy.Options) {
			// The load report on every answer, both ways.
			o.LoadReport = &proxy.LoadReport{Key: "Endpoint-Load-Metrics", Value: func(http.Header) string { return "TEXT cpu=1" }}
		}})
	for _, tc := range servedCases {
		t.Run(tc.name, func(t *testing.T) {
			logged := len(h.access.All())
			before := h.obs.snapshot()
			served := answerOf(t, h, tc.raw)
			viaServer := eng.last()
			afterServed := h.obs.snapshot()

			head, body, _ := strings.Cut(tc.raw, "\r\n\r\n")
			c := newRawClient()
			e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), c)
			if !e.Answered || e.Gone || e.Handed != nil {
				t.Fatalf("AnswerEarly: %+v, want it answered", e)
			}
			norm := func(b []byte) string {
				return string(dateLine.ReplaceAll(b, []byte("Date: (date)\r\n")))
			}
			if got, want := norm(c.Bytes()), norm(served); got != want {
				t.Errorf("early answer:\n%q\nnet/http's:\n%q", got, want)
			}
			early := eng.last()
			if early.method != viaServer.method || early.uri != viaServer.uri || early.host != viaServer.host || early.body != viaServer.body {
				t.Errorf("the engine got %s %s (Host %s) %q early, %s %s (Host %s) %q through net/http",
					early.method, early.uri, early.host, early.body, viaServer.method, viaServer.uri, viaServer.host, viaServer.body)
			}
			if !strings.Contains(tc.raw, "X-Request-Id") {
				// An id slotgate made up: its number differs.
				early.header.Del("X-Request-Id")
				viaServer.header.Del("X-Request-Id")
			}
			if !maps.EqualFunc(early.header, viaServer.header, func(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }) {
				t.Errorf("the engine's header early:\n%v\nthrough net/http:\n%v", early.header, viaServer.header)
			}
			if got, want := diff(h.obs.snapshot().done, afterServed.done), diff(afterServed.done, before.done); !maps.Equal(got, want) {
				t.Errorf("outcomes early %v, through net/http %v", got, want)
			}
			lines := h.accessLines()[logged:]
			if len(lines) != 2 {
				t.Fatalf("%d access-log lines, want 2 (net/http's, the early one)", len(lines))
			}
			for _, k := range []string{"method", "path", "proto", "status", "outcome", "bytes_in", "bytes_out"} {
				if lines[0][k] != lines[1][k] {
					t.Errorf("access log %s: %v early, %v through net/http", k, lines[1][k], lines[0][k])
				}
			}
		})
	}
}

// BenchmarkAnswerEarly serves a small completion through the front end,
// against an engine over loopback that answers from fixed bytes (so that
// the allocations counted are the proxy's).
func BenchmarkAnswerEarly(b *testing.B) {
	const answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 36\r\n" +
		"date: Sat, 05 Dec 2026 00:00:00 GMT\r\nserver: uvicorn\r\n\r\n{\"id\":\"x\",\"choices\":[{\"text\":\"ok\"}]}"
	var mu sync.Mutex
	var conns []net.Conn
	u := rawEngine(b, func(c net.Conn) {
		defer c.Close()
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
	b.Cleanup(func() { // before rawEngine's, which waits for them
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	h := newHarness(b, harnessConfig{engineURL: u, limits: limiter.Options{Slots: 4},
		options: func(o *proxy.Options) { o.AccessLog = nil }})
	head := []byte("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wrk\r\n" +
		"Content-Type: application/json\r\nContent-Length: 43\r\n\r\n")
	body := []byte(`{"model":"m","prompt":"hi","max_tokens":16}`)
	c := newRawClient()
	b.ReportAllocs()
	for b.Loop() {
		c.Reset()
		if e := h.proxy.AnswerEarly(head, body, c); !e.Answered {
			b.Fatalf("not answered: %+v", e)
		}
	}
}

// TestAnswerEarlyHandsOn: what the front end does not write itself goes
// on to net/http with its exchange, sent to the engine only where the
// table says (never twice); a request that would wait goes on with only
// its queue place held, which refuses the next request at once; a handed
// exchange, or place, whose request net/http never serves ends when
// abandoned, its slot or place back.
func TestAnswerEarlyHandsOn(t *testing.T) {
	eng := &earlyEngine{}
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 1},
		options: func(o *proxy.Options) {
			o.LoadReport = &proxy.LoadReport{Key: "Endpoint-Load-Metrics", Value: func(http.Header) string { return "x" },
				RequestHeaders: []string{"Endpoint-Load-Metrics-Format"}}
		}})
	for _, tc := range []struct {
		name, raw string
		sent      bool
	}{
		{"a stream", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n{\"prompt\":\"hi\",\"stream\":true}\n", false},
		{"a field the load report reads", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nendpoint-load-metrics-format: TEXT\r\n" +
			"Content-Length: 2\r\n\r\n{}", false},
		{"a chunked answer", "POST /chunked HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, cancelled := eng.count(), h.obs.snapshot().done["cancelled_running"]
			head, body, _ := strings.Cut(tc.raw, "\r\n\r\n")
			e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), newRawClient())
			if e.Answered || e.Handed == nil {
				t.Fatalf("AnswerEarly: %+v, want it handed on", e)
			}
			if sent := eng.count() > before; sent != tc.sent {
				t.Errorf("sent to the engine: %v, want %v", sent, tc.sent)
			}
			if s := h.lim.Stats(); s.Holding != 1 {
				t.Errorf("handed on: %d slots held, want 1", s.Holding)
			}
			e.Handed.Abandon()
			// A request the engine had is held for the abort grace, the
			// time the engine takes to see it abandoned.
			h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
			if got := h.obs.snapshot().done["cancelled_running"]; got != cancelled+1 {
				t.Errorf("cancelled_running reported %d times, want %d", got, cancelled+1)
			}
			lines := h.accessLines()
			if last := lines[len(lines)-1]; last["path"] == "" || last["method"] != "POST" || last["status"] != int64(499) {
				t.Errorf("the abandoned exchange's access-log line: %v", last)
			}
		})
	}
	t.Run("would wait", func(t *testing.T) {
		p, err := h.lim.TryAcquire(limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		before := h.lim.Stats()
		head, body := []byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"), []byte("{}")
		e := h.proxy.AnswerEarly(head, body, newRawClient())
		if e.Answered || e.Lent != nil || e.Handed == nil {
			t.Fatalf("AnswerEarly: %+v, want the request handed to net/http, its queue place held", e)
		}
		if after := h.lim.Stats(); after.Holding != before.Holding || after.Waiting != before.Waiting {
			t.Errorf("the limiter changed: %+v, then %+v", before, after)
		}
		// The place held is the queue's only one: the next request is
		// refused at once, before net/http reads it.
		c := newRawClient()
		if next := h.proxy.AnswerEarly(head, body, c); !next.Answered || !strings.HasPrefix(c.String(), "HTTP/1.1 529 ") {
			t.Errorf("with the queue's place held: AnswerEarly %+v, wrote %q; want a 529", next, c.String())
		}
		// A request net/http never served gives its place back.
		e.Handed.Abandon()
		again := h.proxy.AnswerEarly(head, body, newRawClient())
		if again.Handed == nil {
			t.Fatalf("after the place came back: AnswerEarly %+v, want it handed on again", again)
		}
		again.Handed.Abandon()
		if after := h.lim.Stats(); after.Holding != before.Holding || after.Waiting != before.Waiting {
			t.Errorf("the limiter changed: %+v, then %+v", before, after)
		}
	})
}

// FuzzAnswerEarlyMatchesServeHTTP: whatever the engine answers, when the
// front end writes the answer itself the client gets the bytes net/http
// and the plain path give it, but the Date the front end adds when the
// engine sent none. The engine here answers every request with the
// fuzzed bytes, then closes its connection.
func FuzzAnswerEarlyMatchesServeHTTP(f *testing.F) {
	var answer sync.Map // "a": the bytes the engine answers
	u := rawEngine(f, func(c net.Conn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		a, _ := answer.Load("a")
		_, _ = io.WriteString(c, a.(string))
	})
	h := newHarness(f, harnessConfig{engineURL: u, limits: limiter.Options{Slots: 1 << 16}})
	f.Add("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nserver: uvicorn\r\n\r\n{}")
	f.Add("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-A: 1\r\nx-a: 2\r\n\r\nno!")
	f.Add("HTTP/1.1 299 Whatever\r\nContent-Type: a/b\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\nContent-Length: 0\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nKeep-Alive: timeout=5\r\nEndpoint-Load-Metrics: x\r\nContent-Length: 1\r\n\r\nz")
	f.Add("HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Length: 9\r\n\r\nshort")
	// Replayable: a request that finds the engine's last connection
	// closing as it goes out is sent again on a new one, on both paths.
	const raw = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}"
	head, body, _ := strings.Cut(raw, "\r\n\r\n")
	f.Fuzz(func(t *testing.T, a string) {
		answer.Store("a", a)
		c := newRawClient()
		e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), c)
		if e.Handed != nil {
			e.Handed.Abandon()
		}
		if !e.Answered {
			return // not the front end's to write
		}
		if e.Gone {
			// The engine broke off its answer: the front end wrote
			// nothing, and net/http gives no whole answer either.
			if c.Len() > 0 {
				t.Fatalf("engine's answer %q: the front end wrote %q and closed", a, c.Bytes())
			}
			if got, err := tryRawAnswer(strings.TrimPrefix(h.url(""), "http://"), raw); err == nil {
				t.Fatalf("engine's answer %q: the front end closed, net/http answered %q", a, got)
			}
			return
		}
		served := rawAnswer(t, strings.TrimPrefix(h.url(""), "http://"), raw)
		norm := func(b []byte) string { return string(dateLine.ReplaceAll(b, []byte("Date: (date)\r\n"))) }
		if got, want := norm(c.Bytes()), norm(served); got != want {
			t.Fatalf("engine's answer %q:\nthe front end wrote\n%q\nnet/http\n%q", a, got, want)
		}
	})
}

// rawAnswer sends raw on a new connection to addr and returns the
// answer's bytes.
func rawAnswer(t *testing.T, addr, raw string) []byte {
	t.Helper()
	got, err := tryRawAnswer(addr, raw)
	if err != nil {
		t.Fatalf("reading net/http's answer: %v", err)
	}
	return got
}

// tryRawAnswer is rawAnswer, failing when no whole answer came.
func tryRawAnswer(addr, raw string) ([]byte, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, err
	}
	var got bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &got)), nil)
	if err != nil {
		return got.Bytes(), err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return got.Bytes(), err
	}
	return got.Bytes(), nil
}

// holdingClient is an early request's client that notes how many slots
// the limiter held when its answer was written.
type holdingClient struct {
	*rawClient
	lim     *limiter.Limiter
	holding []int
}

func (c *holdingClient) Write(p []byte) (int, error) {
	c.holding = append(c.holding, c.lim.Stats().Holding)
	return c.rawClient.Write(p)
}

// TestAnswerEarlyEndsBeforeWriting: a request the front end serves gives
// its slot back before its answer goes out, as net/http's path does
// (its handler ends the exchange while a small answer is still in the
// connection's buffer): a client that has its answer, and sends the next
// request on another connection or reads the metrics, finds the slot
// free.
func TestAnswerEarlyEndsBeforeWriting(t *testing.T) {
	h := newHarness(t, harnessConfig{engine: &earlyEngine{}, limits: limiter.Options{Slots: 1}})
	c := &holdingClient{rawClient: newRawClient(), lim: h.lim}
	raw := servedCases[0].raw
	head, body, _ := strings.Cut(raw, "\r\n\r\n")
	if e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), c); !e.Answered || e.Gone {
		t.Fatalf("AnswerEarly: %+v, want it answered", e)
	}
	if len(c.holding) != 1 || c.holding[0] != 0 {
		t.Errorf("slots held as the answer was written: %v, want [0]", c.holding)
	}
}

// TestAnswerEarlyLeavesClosingToNetHTTP: once the proxy closes its
// connections (a drain began), the front end leaves every request to
// net/http, whose handler closes the connection after the answer: a
// request it would serve and one it would refuse, the engine and the
// gate untouched.
func TestAnswerEarlyLeavesClosingToNetHTTP(t *testing.T) {
	eng := &earlyEngine{}
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1}})
	raw := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	head, body, _ := strings.Cut(raw, "\r\n\r\n")
	offer := func() proxy.Early {
		return h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), newRawClient())
	}
	if e := offer(); !e.Answered {
		t.Fatalf("before closing: %+v, want it served", e)
	}
	served := eng.count()
	h.proxy.CloseConnections()
	if e := offer(); e.Answered || e.Handed != nil || e.Lent != nil {
		t.Errorf("closing, a request it would serve: %+v, want it left to net/http", e)
	}
	h.proxy.StartDraining()
	if e := offer(); e.Answered || e.Handed != nil || e.Lent != nil {
		t.Errorf("draining, a request it would refuse: %+v, want it left to net/http", e)
	}
	if n := eng.count(); n != served {
		t.Errorf("the engine got %d requests after closing began", n-served)
	}
	if s := h.lim.Stats(); s.AdmittedDirect != 1 || s.RejectedFull != 0 {
		t.Errorf("limiter %+v: only the request before closing is counted", s)
	}
}
