package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// lendingClient is an early request's client on a real connection,
// whose server end it lends to the relay (proxy.LendingClient). Its
// watch never starts: the client stays.
type lendingClient struct{ conn net.Conn }

func (c lendingClient) Write(p []byte) (int, error)       { return c.conn.Write(p) }
func (c lendingClient) RemoteAddr() net.Addr              { return c.conn.RemoteAddr() }
func (c lendingClient) Watch(time.Duration, proxy.Cutter) {}
func (c lendingClient) Unwatch() bool                     { return false }
func (c lendingClient) Conn() net.Conn                    { return c.conn }

// readStream reads a chunked answer, head and body, to its last chunk.
func readStream(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	var b []byte
	for !bytes.HasSuffix(b, []byte("\r\n0\r\n\r\n")) {
		line, err := br.ReadBytes('\n')
		b = append(b, line...)
		if err != nil {
			t.Fatalf("read %q, then %v", b, err)
		}
	}
	return b
}

// readFirstChunk reads a chunked answer's head and its first chunk.
func readFirstChunk(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	var b []byte
	head := true
	for {
		line, err := br.ReadBytes('\n')
		b = append(b, line...)
		if err != nil {
			t.Fatalf("read %q, then %v", b, err)
		}
		switch {
		case head && string(line) == "\r\n":
			head = false
		case !head && string(line) == "\r\n":
			return b // the CRLF after the chunk's data
		}
	}
}

// TestAnswerEarlyRelaysStreams sends a stream through a real net/http
// server in front of the proxy, whose answer the relay carries, then
// offers the same bytes to AnswerEarly with a connection it can lend:
// the front end must send the request itself and lend the connection
// for the relay (Early.Lent), the client must get the same bytes, head
// and body, but for the Date, the engine the same request, and the
// outcome and access-log line must be the same; the first event goes out
// with the head, before the relay starts. The connection, given back to
// the server once the stream ended, serves a next request.
func TestAnswerEarlyRelaysStreams(t *testing.T) {
	eng := sseEngine(5, time.Millisecond)
	h := newRelayHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 2},
		options: func(o *proxy.Options) {
			o.LoadReport = &proxy.LoadReport{Key: "Endpoint-Load-Metrics", Value: func(http.Header) string { return "TEXT cpu=1" }}
		}})
	raw := relayRequest("X-Request-Id: same\r\n")
	c, br := h.rawConn()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	served := readStream(t, br)
	h.waitDone(1)
	afterServed := h.obs.snapshot()

	client, server := loopback.Pair(t)
	head, body, _ := strings.Cut(raw, "\r\n\r\n")
	e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), lendingClient{server})
	if !e.Answered || e.Gone || e.Handed != nil || e.Lent == nil {
		t.Fatalf("AnswerEarly: %+v, want a stream lent to the relay", e)
	}
	// The head and the first event, which came from the engine together,
	// went out together before the relay had the stream (relay.Lead).
	_ = client.SetDeadline(time.Now().Add(bound))
	cbr := bufio.NewReader(client)
	early := readFirstChunk(t, cbr)
	e.Lent.Start(true)
	early = append(early, readStream(t, cbr)...)
	norm := func(b []byte) string { return string(dateLine.ReplaceAll(b, []byte("Date: (date)\r\n"))) }
	if got, want := norm(early), norm(served); got != want {
		t.Errorf("early stream:\n%q\nnet/http's:\n%q", got, want)
	}
	s := h.waitDone(2)
	if got, want := diff(s.done, afterServed.done), diff(afterServed.done, nil); !maps.Equal(got, want) {
		t.Errorf("outcomes early %v, through net/http %v", got, want)
	}
	// Done reports the outcome, then writes the access-log line.
	waitFor(t, "two access-log lines (net/http's, the early one)", func() bool { return h.access.Len() >= 2 })
	lines := h.accessLines()
	if len(lines) != 2 {
		t.Fatalf("%d access-log lines, want 2 (net/http's, the early one)", len(lines))
	}
	for _, k := range []string{"method", "path", "proto", "status", "outcome", "bytes_in", "bytes_out", "request_id"} {
		if lines[0][k] != lines[1][k] {
			t.Errorf("access log %s: %v early, %v through net/http", k, lines[1][k], lines[0][k])
		}
	}
	// The relay gave the connection to the front server: it serves the
	// next request.
	if _, err := io.WriteString(client, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(cbr, nil)
	if err != nil {
		t.Fatalf("the next request on the lent connection: %v", err)
	}
	_ = resp.Body.Close()
	h.waitStats("every slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
}

// TestAnswerEarlyStreamsHandedOn: a stream the front end may not lend to
// the relay goes to net/http with its exchange, not yet sent: its
// client's connection cannot be lent, or the client sent a TE field
// (which may ask for the load report's trailer, net/http's path alone).
func TestAnswerEarlyStreamsHandedOn(t *testing.T) {
	h := newRelayHarness(t, harnessConfig{engine: sseEngine(1, 0), limits: limiter.Options{Slots: 1},
		options: func(o *proxy.Options) {
			o.LoadReport = &proxy.LoadReport{Key: "Endpoint-Load-Metrics", Value: func(http.Header) string { return "x" }}
		}})
	_, server := loopback.Pair(t)
	for _, tc := range []struct {
		name, raw string
		c         proxy.EarlyClient
	}{
		{"no connection to lend", relayRequest(""), newRawClient()},
		{"a TE field", relayRequest("TE: trailers\r\n"), lendingClient{server}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, body, _ := strings.Cut(tc.raw, "\r\n\r\n")
			e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(body), tc.c)
			if e.Answered || e.Lent != nil || e.Handed == nil {
				t.Fatalf("AnswerEarly: %+v, want it handed on", e)
			}
			e.Handed.Abandon()
			h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
		})
	}
}

// TestAnswerEarlyRelaysUnaskedStreams: a request that does not ask for a
// stream, which the engine answers with one all the same, is relayed from
// the front end as an asked-for stream is, when its connection can be
// lent (net/http's path would hijack it); when it cannot, the sent
// exchange goes to net/http with its answer.
func TestAnswerEarlyRelaysUnaskedStreams(t *testing.T) {
	h := newRelayHarness(t, harnessConfig{engine: sseEngine(3, 0), limits: limiter.Options{Slots: 1}})
	unasked := strings.Replace(chatBody, `,"stream":true`, "", 1)
	raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(unasked), unasked)
	head, body, _ := strings.Cut(raw, "\r\n\r\n")
	head += "\r\n\r\n"

	t.Run("lent to the relay", func(t *testing.T) {
		client, server := loopback.Pair(t)
		e := h.proxy.AnswerEarly([]byte(head), []byte(body), lendingClient{server})
		if !e.Answered || e.Gone || e.Handed != nil || e.Lent == nil {
			t.Fatalf("AnswerEarly: %+v, want the stream lent to the relay", e)
		}
		e.Lent.Start(true)
		_ = client.SetDeadline(time.Now().Add(bound))
		got := readStream(t, bufio.NewReader(client))
		if !bytes.Contains(got, []byte("text/event-stream")) || !bytes.Contains(got, []byte("data: [DONE]")) {
			t.Errorf("the client read %q, want the engine's whole event stream", got)
		}
		h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
	})
	t.Run("no connection to lend", func(t *testing.T) {
		e := h.proxy.AnswerEarly([]byte(head), []byte(body), newRawClient())
		if e.Answered || e.Lent != nil || e.Handed == nil {
			t.Fatalf("AnswerEarly: %+v, want the answered exchange handed on", e)
		}
		e.Handed.Abandon()
		h.waitStats("the slot back", func(s limiter.Stats) bool { return s.Holding == 0 })
	})
}

// FuzzAnswerEarlyRelaysStreams: whatever fields the engine's event stream
// comes with, when the front end lends the connection to the relay the
// client gets the bytes, head and body, that net/http's path and the
// relay give it, but the Date the front end adds when the engine sent
// none. The engine here answers every request with the fuzzed fields
// around a fixed event stream, on connections it keeps, and net/http's
// path is asked on one kept connection too: a fuzzing run makes
// thousands of streams, whose closed connections would otherwise use up
// the loopback's ports.
func FuzzAnswerEarlyRelaysStreams(f *testing.F) {
	const body = "a\r\ndata: hi\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
	var fields sync.Map      // "f": the engine's fields, each line ending in CRLF
	var engineConns sync.Map // the engine's connections, closed when the test ends
	u := rawEngine(f, func(c net.Conn) {
		engineConns.Store(c, nil)
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			v, _ := fields.Load("f")
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n"+v.(string)+
				"Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+body); err != nil {
				return
			}
		}
	})
	h := newRelayHarness(f, harnessConfig{engineURL: u, limits: limiter.Options{Slots: 1 << 16}})
	f.Cleanup(func() {
		engineConns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
	})
	f.Add("")
	f.Add("X-Engine: a\r\nx-engine: b\r\nCache-Control: no-cache\r\n")
	f.Add("Date: Mon, 01 Jan 2024 00:00:00 GMT\r\nServer: uvicorn\r\n")
	f.Add("Keep-Alive: timeout=5\r\nConnection: keep-alive\r\nContent-Length: 9\r\n")
	f.Add("X-Odd:  spaced  \r\nContent-Encoding: identity\r\n")
	raw := relayRequest("")
	head, reqBody, _ := strings.Cut(raw, "\r\n\r\n")
	var kept struct { // net/http's path's connection, kept between inputs
		c  net.Conn
		br *bufio.Reader
	}
	f.Cleanup(func() {
		if kept.c != nil {
			_ = kept.c.Close()
		}
	})
	viaServer := func(t *testing.T) []byte {
		if kept.c == nil {
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			kept.c, kept.br = c, bufio.NewReader(c)
		}
		_ = kept.c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(kept.c, raw); err != nil {
			t.Fatal(err)
		}
		got := readStream(t, kept.br)
		if bytes.Contains(got, []byte("\r\nConnection: close\r\n")) {
			_ = kept.c.Close()
			kept.c = nil
		}
		return got
	}
	f.Fuzz(func(t *testing.T, engineFields string) {
		fields.Store("f", engineFields)
		client, server := loopback.Pair(t)
		_ = client.SetLinger(0) // closed with a reset: no port left waiting
		e := h.proxy.AnswerEarly([]byte(head+"\r\n\r\n"), []byte(reqBody), lendingClient{server})
		if e.Handed != nil {
			e.Handed.Abandon()
		}
		if e.Lent == nil {
			return // not the front end's to relay
		}
		e.Lent.Start(true)
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		early := readStream(t, bufio.NewReader(client))
		served := viaServer(t)
		norm := func(b []byte) string { return string(dateLine.ReplaceAll(b, []byte("Date: (date)\r\n"))) }
		if got, want := norm(early), norm(served); got != want {
			t.Fatalf("engine's fields %q:\nthe front end wrote\n%q\nnet/http and the relay\n%q", engineFields, got, want)
		}
	})
}
