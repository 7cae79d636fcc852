package engine

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestRecycle: the common answer is read into parts that Recycle gives
// back once its body is closed (not before); an answer ReadResponse read
// (a chunked one, as a stream's) keeps no parts, and Recycle leaves it.
func TestRecycle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: bound, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
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

	plain := send("/plain")
	b, _ := plain.Body.(*answerBody)
	if b == nil || b.parts == nil || plain != &b.parts.resp {
		t.Fatalf("the common answer was not read into its parts (body %T)", plain.Body)
	}
	c.Recycle(plain) // too early: its body is open
	if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Recycle before Close reset the answer: %d %v", plain.StatusCode, plain.Header)
	}
	parts := b.parts
	_ = plain.Body.Close()
	c.Recycle(plain)
	if plain.StatusCode != 0 || len(parts.header) != 0 || len(parts.values) != 0 || b.ec != nil {
		t.Errorf("Recycle after Close left the parts as they were: %d %v %q", plain.StatusCode, parts.header, parts.values)
	}

	chunked := send("/chunked")
	if b, _ := chunked.Body.(*answerBody); b == nil || b.parts != nil {
		t.Fatalf("a chunked answer kept parts (body %T)", chunked.Body)
	}
	_ = chunked.Body.Close()
	c.Recycle(chunked)
	if chunked.StatusCode != http.StatusOK || len(chunked.TransferEncoding) == 0 {
		t.Errorf("Recycle changed ReadResponse's answer: %d %v", chunked.StatusCode, chunked.TransferEncoding)
	}
}
