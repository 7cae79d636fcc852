package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The fake engine's answers to FuzzDo's requests, and the client's head
// limit there (small, so that an oversized head fits a corpus file).
const (
	fuzzHeadLimit = 4096
	fuzzGood      = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"
	// fuzzCut bounds the fuzzed exchange: an answer the engine leaves
	// unfinished on an open connection waits this long, then its
	// context cuts it.
	fuzzCut = 100 * time.Millisecond
)

// fuzzEngine is a fake engine on a real 127.0.0.1 listener: it answers a
// request marked X-Fuzz with the raw bytes of answer (then closes the
// connection when closeAfter is set, else waits for the next request on
// it), and every other request with fuzzGood, each in one write. It
// records the connection (numbered from 1) of every request.
type fuzzEngine struct {
	ln net.Listener
	wg sync.WaitGroup

	mu         sync.Mutex
	answer     []byte
	closeAfter bool
	next       int        // connections accepted
	open       []net.Conn // the engine's side, closed at the end
	seen       []int      // the connection of each request, in order
}

func newFuzzEngine(tb testing.TB) *fuzzEngine {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	e := &fuzzEngine{ln: ln}
	e.wg.Go(e.accept)
	tb.Cleanup(func() {
		_ = ln.Close()
		e.mu.Lock()
		for _, c := range e.open {
			if c != nil {
				_ = c.Close()
			}
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *fuzzEngine) url() *url.URL { return &url.URL{Scheme: "http", Host: e.ln.Addr().String()} }

// set makes answer the engine's answer to the next X-Fuzz requests, and
// forgets the requests seen.
func (e *fuzzEngine) set(answer []byte, closeAfter bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answer, e.closeAfter, e.seen = answer, closeAfter, e.seen[:0]
}

// requests returns the connection of each request since set.
func (e *fuzzEngine) requests() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.seen...)
}

func (e *fuzzEngine) accept() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.next++
		id := e.next
		// Keep only the connections still open at the end: one closed
		// by serve is dropped from the list on the next accept.
		open := e.open[:0]
		for _, o := range e.open {
			if o != nil {
				open = append(open, o)
			}
		}
		e.open = append(open, c)
		e.mu.Unlock()
		e.wg.Go(func() { e.serve(c, id) })
	}
}

func (e *fuzzEngine) serve(c net.Conn, id int) {
	defer func() {
		_ = c.Close()
		e.mu.Lock()
		for i, o := range e.open {
			if o == c {
				e.open[i] = nil
			}
		}
		e.mu.Unlock()
	}()
	_ = c.SetDeadline(time.Now().Add(bound))
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		e.mu.Lock()
		e.seen = append(e.seen, id)
		answer, closeAfter := e.answer, e.closeAfter
		e.mu.Unlock()
		if req.Header.Get("X-Fuzz") == "" {
			answer, closeAfter = []byte(fuzzGood), false
		}
		if _, err := c.Write(answer); err != nil || closeAfter {
			return
		}
	}
}

// fuzzConn is a client connection that records its Close.
type fuzzConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *fuzzConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// fuzzResult is one exchange: the answer read to its end, or the error
// that ended it.
type fuzzResult struct {
	status int
	body   []byte
	err    error
}

// fuzzExchange sends one request with method on c within d and reads its
// answer to its end (or its error), failing the test if that takes
// longer than bound: the context must cut any exchange short.
func fuzzExchange(t *testing.T, c *Client, u *url.URL, method string, fuzzed bool, d time.Duration) fuzzResult {
	t.Helper()
	done := make(chan fuzzResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var body []byte
		if method == http.MethodPost {
			body = []byte(`{"prompt":"x"}`)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.JoinPath("/v1/completions").String(), bytes.NewReader(body))
		if err != nil {
			done <- fuzzResult{err: err}
			return
		}
		if fuzzed {
			req.Header.Set("X-Fuzz", "1")
		}
		resp, err := c.Do(req, body)
		switch {
		case err != nil && resp != nil:
			done <- fuzzResult{err: fmt.Errorf("Do returned both an answer (%d) and %w", resp.StatusCode, err)}
			_ = resp.Body.Close()
			return
		case err != nil:
			done <- fuzzResult{err: err}
			return
		case resp == nil:
			done <- fuzzResult{err: errors.New("Do returned neither an answer nor an error")}
			return
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		done <- fuzzResult{status: resp.StatusCode, body: b, err: err}
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(d + bound):
		t.Fatalf("a %s exchange with a %s deadline did not end within %s more", method, d, bound)
		return fuzzResult{}
	}
}

// fuzzMethods are the methods of FuzzDo's fuzzed request, chosen by mode.
var fuzzMethods = []string{http.MethodPost, http.MethodGet, http.MethodHead}

// FuzzDo feeds the raw bytes of answer, as a fake engine's answer on a real
// TCP connection, to the hand-written client's response parsing (conn.go,
// body.go). mode's bit 0 makes the engine close the connection after
// answer (else it keeps it open, and answers the next request on it);
// mode>>1 picks the method (POST with a body, GET, HEAD). Whatever the
// bytes:
//   - Do never panics, and returns an answer or an error, never both;
//   - the exchange ends within its deadline (an unfinished answer is cut
//     by the context), and an answer returned reads to an end or fails;
//   - a connection whose exchange failed is closed and never pooled;
//   - the next request gets its own answer, on a connection other than
//     the failed one: nothing of answer (bytes past its end, say) is ever
//     read as the next request's answer.
func FuzzDo(f *testing.F) {
	for _, s := range fuzzDoSeeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	e := newFuzzEngine(f)
	f.Fuzz(func(t *testing.T, answer []byte, mode uint8) {
		if len(answer) > 64<<10 {
			return // more than a socket buffer: the engine's write could block
		}
		closeAfter := mode&1 == 1
		method := fuzzMethods[int(mode>>1)%len(fuzzMethods)]
		e.set(answer, closeAfter)

		c, err := New(Options{URL: e.url(), Pool: 4, MaxResponseHeaderBytes: fuzzHeadLimit})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var mu sync.Mutex
		var dialed []*fuzzConn
		dial := c.direct.dial
		c.direct.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			fc := &fuzzConn{Conn: nc}
			mu.Lock()
			dialed = append(dialed, fc)
			mu.Unlock()
			return fc, nil
		}

		first := fuzzExchange(t, c, e.url(), method, true, fuzzCut)
		if first.err != nil {
			// A failed exchange leaves no connection open, nor pooled.
			c.direct.pool.mu.Lock()
			pooled := len(c.direct.pool.idle)
			c.direct.pool.mu.Unlock()
			if pooled != 0 {
				t.Fatalf("exchange failed (%v), yet %d connection(s) pooled", first.err, pooled)
			}
			mu.Lock()
			for i, fc := range dialed {
				if !fc.closed.Load() {
					t.Fatalf("exchange failed (%v), yet connection %d of %d is open", first.err, i+1, len(dialed))
				}
			}
			mu.Unlock()
		}

		// A GET: a POST on a connection the engine closed as the answer
		// ended, before the close arrived, fails by design (a generation
		// the engine may have read is never resent).
		second := fuzzExchange(t, c, e.url(), http.MethodGet, false, bound)
		if second.err != nil || second.status != http.StatusOK || string(second.body) != "good" {
			t.Fatalf("after a first exchange of %d %q %v: the next request got %d %q %v, want 200 \"good\"",
				first.status, first.body, first.err, second.status, second.body, second.err)
		}
		if seen := e.requests(); first.err != nil && len(seen) == 2 && seen[0] == seen[1] {
			t.Fatalf("exchange failed (%v), yet the next request went on its connection", first.err)
		}
	})
}

// fuzzDoSeeds are FuzzDo's seeds: answers an engine may give, and
// hostile ones.
var fuzzDoSeeds = []string{
	// Valid answers.
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"1a\r\ndata: {\"choices\":[1]}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nread to the close",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nbusy",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n0\r\nX-Trailer: t\r\n\r\n",
	// Hostile answers.
	"HTTP/1.1 200 OK\r\nX-Big: " + string(bytes.Repeat([]byte("h"), fuzzHeadLimit)) + "\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200\r\n\r\n",
	"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/9.9 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 -1 X\r\n\r\n",
	"200 OK\r\n\r\n",
	"SSH-2.0-OpenSSH_9.6\r\n",
	"",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\n Content-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhi\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nrest",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x00",
	"HTTP/1.1 100 Continue\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent\x00Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nX: \xff\xfe\r\nContent-Length: 2\r\n\r\n{}",
}

// TestDoBytesPastAnswerNotReused is FuzzDo's first find: an engine that
// sent more than its answer (bytes past the Content-Length, or past an
// unasked 101) had its connection pooled with those bytes read ahead, and
// the next request on it got them as its answer. Such a connection is now
// closed, and the next request gets its own answer on a new one.
func TestDoBytesPastAnswerNotReused(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"bytes past Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"},
		{"unasked 101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFuzzEngine(t)
			e.set([]byte(tc.answer), false)
			c := newTestClient(t, e.url().Host)
			if r := fuzzExchange(t, c, e.url(), http.MethodPost, true, bound); r.err != nil {
				t.Fatalf("first exchange: %v", r.err)
			}
			r := fuzzExchange(t, c, e.url(), http.MethodPost, false, bound)
			if r.err != nil || r.status != http.StatusOK || string(r.body) != "good" {
				t.Fatalf("next request got %d %q %v, want 200 \"good\"", r.status, r.body, r.err)
			}
			if seen := e.requests(); len(seen) != 2 || seen[0] == seen[1] {
				t.Fatalf("requests on connections %v, want two different ones", seen)
			}
		})
	}
}
