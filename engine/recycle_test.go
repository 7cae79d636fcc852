package engine

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestRecycle: the common answers, of a stated length or chunked (a
// stream's), are read into parts that Recycle gives back once the body
// is closed (not before); an answer ReadResponse read (one that says
// Connection: close) keeps no parts, and Recycle leaves it.
func TestRecycle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: bound, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = io.WriteString(w, `{"a":1}`)
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // before the end: no length, chunked
		}
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
	c := newTestClient(t, ln.Addr().String())
	send := func(path string) *http.Response {
		t.Helper()
		raw := "GET " + path + " HTTP/1.1\r\nHost: " + ln.Addr().String() + "\r\n\r\n"
		resp, err := c.SendRaw(new(Cut), []byte(raw), true)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != `{"a":1}` {
			t.Fatalf("%s: body %q, %v", path, b, err)
		}
		return resp
	}

	for _, path := range []string{"/plain", "/chunked"} {
		resp := send(path)
		b, _ := resp.Body.(*answerBody)
		if b == nil || b.parts == nil || resp != &b.parts.resp {
			t.Fatalf("%s: the answer was not read into its parts (body %T)", path, resp.Body)
		}
		if chunked := len(resp.TransferEncoding) == 1; chunked != (path == "/chunked") {
			t.Fatalf("%s: transfer coding %q", path, resp.TransferEncoding)
		}
		c.Recycle(resp) // too early: its body is open
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: Recycle before Close reset the answer: %d %v", path, resp.StatusCode, resp.Header)
		}
		parts := b.parts
		_ = resp.Body.Close()
		c.Recycle(resp)
		if resp.StatusCode != 0 || len(parts.header) != 0 || len(parts.values) != 0 || b.ec != nil {
			t.Errorf("%s: Recycle after Close left the parts as they were: %d %v %q", path, resp.StatusCode, parts.header, parts.values)
		}
	}

	closing := send("/close")
	if b, _ := closing.Body.(*answerBody); b == nil || b.parts != nil {
		t.Fatalf("an answer ReadResponse read kept parts (body %T)", closing.Body)
	}
	_ = closing.Body.Close()
	c.Recycle(closing)
	if closing.StatusCode != http.StatusOK || !closing.Close {
		t.Errorf("Recycle changed ReadResponse's answer: %d, Close %v", closing.StatusCode, closing.Close)
	}
}
