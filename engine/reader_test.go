package engine

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestReadBufferOnlyWhileAnswering: a connection holds its read buffer
// only while it reads an answer: back in the pool after an answer read to
// its end it holds none, the next request on it takes one again, and a
// detached answer (a relayed stream) holds none either.
func TestReadBufferOnlyWhileAnswering(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // one keep-alive connection: two plain answers, then a stream
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for i := range 3 {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
			if i == 2 {
				answer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
		_, _ = br.ReadByte() // until the client closes
	})
	c := newTestClient(t, ln.Addr().String())
	do := func() *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 2 {
		resp := do()
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "{}" {
			t.Fatalf("answer %d: %q, %v", i, b, err)
		}
		_ = resp.Body.Close()
		c.direct.pool.mu.Lock()
		idle := c.direct.pool.idle
		if len(idle) != 1 || idle[0].br != nil {
			t.Errorf("after answer %d: %d pooled connections, the first holding a read buffer: %v",
				i, len(idle), len(idle) == 1 && idle[0].br != nil)
		}
		c.direct.pool.mu.Unlock()
	}
	resp := do()
	d, ok := Detach(resp)
	if !ok {
		t.Fatal("the stream's answer could not be detached")
	}
	defer d.Done(false)
	if b := resp.Body.(*answerBody); b.ec.br != nil {
		t.Error("a detached answer's connection still holds its read buffer")
	}
	if got := string(d.Buffered); got != "5\r\nhello\r\n" {
		t.Errorf("detached with %q buffered, want the chunk read with the head", got)
	}
}
