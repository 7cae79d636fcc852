package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	engineclient "github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// heldBody wraps the engine request's body in the transport and holds its
// reads once holdAfter bytes were read (0: every read) until release is
// closed, so that a test can run them after the proxy sent the engine's
// response headers to the client. That is the order the scheduler picks
// now and then under load: http.Transport reads the request body on its
// own goroutine, and after the declared length it reads once more to
// check for EOF.
type heldBody struct {
	io.ReadCloser
	holdAfter int64 // hold reads once this many bytes were read
	release   <-chan struct{}
	read      int64
	heldErr   chan error // the first held read's error, nil for io.EOF
	once      sync.Once
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.read < b.holdAfter {
		n, err := b.ReadCloser.Read(p)
		b.read += int64(n)
		return n, err
	}
	select {
	case <-b.release:
	case <-time.After(bound):
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	b.once.Do(func() {
		if err == io.EOF {
			b.heldErr <- nil
		} else {
			b.heldErr <- err
		}
	})
	return n, err
}

type holdingTransport struct {
	rt   http.RoundTripper
	body func(io.ReadCloser) io.ReadCloser
}

func (t holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = t.body(r.Body)
	}
	return t.rt.RoundTrip(r)
}

// A directly admitted HTTP/1.1 request's body is the client connection's
// body, read by the engine transport while the engine's response streams
// back. net/http's server, unless told the handler runs full duplex,
// consumes and closes an unread request body when the response headers go
// out; a transport read after that fails with "invalid Read on closed
// Body", the transport closes the engine connection, and the stream dies
// with "use of closed network connection" after its 200 (engine_error,
// ttfb 0, bytes_out 0): a rare failure at the start of slotgate-demo's
// burst.
func TestStreamSurvivesBodyReadAfterHeaders(t *testing.T) {
	const reqBody = `{"prompt":"hello","stream":true}`
	tests := []struct {
		name string
		// holdAfter: the body reads held until the client has the
		// response headers start after this many bytes.
		holdAfter int64
		// readFirst: the engine reads the whole body before answering.
		readFirst bool
	}{
		// The demo's case: the engine has the whole body and answers;
		// the transport's final EOF check comes after the headers.
		{name: "engine answers after the body, EOF check late", holdAfter: int64(len(reqBody)), readFirst: true},
		// An engine that answers before it reads the body.
		{name: "engine answers before the body", holdAfter: 0, readFirst: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{}) // the client has the headers
			heldErr := make(chan error, 1)
			finish := make(chan struct{}) // the held read happened
			engineGot := make(chan string, 1)
			engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var got []byte
				if tc.readFirst {
					got, _ = io.ReadAll(r.Body)
				} else {
					_ = http.NewResponseController(w).EnableFullDuplex()
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_ = http.NewResponseController(w).Flush()
				select {
				case <-finish:
				case <-r.Context().Done():
					return
				}
				if !tc.readFirst {
					got, _ = io.ReadAll(r.Body)
				}
				engineGot <- string(got)
				_, _ = io.WriteString(w, "data: done\n\n")
			})
			h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 1},
				options: func(o *proxy.Options) {
					rt := engineclient.NewTransport(4) // net/http's transport, whose body reads this is about
					t.Cleanup(rt.CloseIdleConnections)
					o.Transport = holdingTransport{rt: rt, body: func(rc io.ReadCloser) io.ReadCloser {
						return &heldBody{ReadCloser: rc, holdAfter: tc.holdAfter, release: release, heldErr: heldErr}
					}}
				}})

			ctx := boundedContext(t)
			req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(reqBody)).WithContext(ctx)
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200", resp.StatusCode)
			}
			close(release)
			if err := receive(t, "the held body read", heldErr); err != nil {
				t.Errorf("engine transport's body read after the response headers: %v", err)
			}
			close(finish)
			rest, err := io.ReadAll(bufio.NewReader(resp.Body))
			if err != nil || string(rest) != "data: done\n\n" {
				t.Errorf("stream = %q, %v; want the whole stream", rest, err)
			}
			select {
			case got := <-engineGot:
				if got != reqBody {
					t.Errorf("engine got body %q, want %q", got, reqBody)
				}
			default:
				t.Error("the engine never finished the request")
			}
			s := h.waitDone(1)
			if s.done[string(gate.AdmittedDirect)] != 1 {
				t.Errorf("outcomes = %v, want admitted_direct", s.done)
			}
		})
	}
}

// writeCounter counts the writes that reach it.
type writeCounter struct{ writes int }

func (w *writeCounter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }

// onWireWrites is a transport that first serialises each request the way
// http.Transport does, into a buffered writer, and counts the writes that
// reach the connection, then sends it with a real transport.
type onWireWrites struct {
	next   http.RoundTripper
	mu     sync.Mutex
	writes []int
}

func (o *onWireWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	var c writeCounter
	bw := bufio.NewWriter(&c)
	clone := req.Clone(req.Context()) // shares req.Body, which Write reads
	out := *req
	if req.GetBody == nil && req.Body != nil {
		// A stream: read it here, serialise it still as a stream, and
		// send what was read.
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		clone.Body = io.NopCloser(struct{ io.Reader }{bytes.NewReader(b)})
		out.Body = io.NopCloser(bytes.NewReader(b))
	}
	if err := clone.Write(bw); err != nil {
		return nil, err
	}
	_ = bw.Flush()
	if req.GetBody != nil {
		b, err := req.GetBody() // the body Write consumed, afresh
		if err != nil {
			return nil, err
		}
		out.Body = b
	}
	o.mu.Lock()
	o.writes = append(o.writes, c.writes)
	o.mu.Unlock()
	return o.next.RoundTrip(&out)
}

// TestSmallBodyGoesOutInOneWrite: a small request body with a declared
// length reaches the engine transport in memory, which sends it in the same write as the headers; a streamed
// (chunked) body does not.
func TestSmallBodyGoesOutInOneWrite(t *testing.T) {
	spy := &onWireWrites{next: engineclient.NewTransport(4)}
	h := newHarness(t, harnessConfig{
		engine: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }),
		limits: limiter.Options{Slots: 1, QueueLen: 2}, options: func(o *proxy.Options) { o.Transport = spy },
	})
	body := `{"model":"m","prompt":"hello"}`
	for _, tc := range []struct {
		name    string
		body    io.Reader
		wantOne bool
	}{
		{"declared length", strings.NewReader(body), true},
		{"chunked", io.MultiReader(strings.NewReader(body)), false},
	} {
		resp, err := http.Post(h.front.URL+"/v1/completions", "application/json", tc.body)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.name, resp.StatusCode)
		}
		spy.mu.Lock()
		got := spy.writes[len(spy.writes)-1]
		spy.mu.Unlock()
		if one := got == 1; one != tc.wantOne {
			t.Errorf("%s: the engine request went out in %d writes; want one: %v", tc.name, got, tc.wantOne)
		}
	}
}
