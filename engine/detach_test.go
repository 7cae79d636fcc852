package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httputil"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
)

// TestDetach takes a chunked answer's connection out of the client, reads
// the rest of its body from the socket, gives it back for reuse, and the
// next request goes over the same connection, read as usual.
func TestDetach(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, n int, _ *http.Request) bool {
		if n == 1 {
			_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"6\r\ndata: \r\n3\r\n{}\n\r\n0\r\n\r\n")
			return true
		}
		ok200(w, `{"n":2}`)
		return true
	})
	c := newClient(t, engine.Options{URL: eng.url()})
	body := []byte(`{"stream":true}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, eng.url().JoinPath("/v1/completions").String(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, body)
	if err != nil {
		t.Fatal(err)
	}
	if !engine.Detachable(resp) {
		t.Fatal("a chunked answer of the hand-written path, unread, is not detachable")
	}
	d, ok := engine.Detach(resp)
	if !ok {
		t.Fatal("Detach failed")
	}
	if engine.Detachable(resp) {
		t.Error("an answer already detached is detachable again")
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("closing a detached answer's body: %v", err)
	}
	// The rest of the body, from the socket, after what was buffered.
	_ = d.Conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	rest, _ := io.ReadAll(d.Conn) // the deadline ends it: the engine keeps the connection
	_ = d.Conn.SetReadDeadline(time.Time{})
	raw := append(append([]byte(nil), d.Buffered...), rest...)
	decoded, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw)))
	if err != nil || string(decoded) != "data: {}\n" {
		t.Fatalf("body from the detached connection: %q (%v), want %q", decoded, err, "data: {}\n")
	}
	d.Done(true)
	if r := post(context.Background(), c, eng.url(), "{}"); r.err != nil || r.body != `{"n":2}` {
		t.Fatalf("the request after the detached answer: %+v", r)
	}
	if n := eng.conns.Load(); n != 1 {
		t.Errorf("%d engine connections, want 1: the detached one was reused", n)
	}
}

// TestDetachRefuses: an answer with a length, or one whose body was
// read, stays with the client.
func TestDetachRefuses(t *testing.T) {
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool { ok200(w, `{"n":1}`); return true })
	c := newClient(t, engine.Options{URL: eng.url()})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, eng.url().JoinPath("/v1/completions").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if engine.Detachable(resp) {
		t.Error("an answer with a Content-Length is detachable")
	}
	if _, ok := engine.Detach(resp); ok {
		t.Error("Detach took an answer with a Content-Length")
	}
}
