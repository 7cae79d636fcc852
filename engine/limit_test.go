package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/engine"
)

const headLimit = 4096

// headEngine answers every request with a header of the size the request
// asks for in X-Head-Size.
func headEngine(t *testing.T) *rawEngine {
	return newRawEngine(t, func(w *bufio.Writer, _ int, req *http.Request) bool {
		size, _ := strconv.Atoi(req.Header.Get("X-Head-Size"))
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 2\r\n\r\n{}", strings.Repeat("h", size))
		return true
	})
}

// headPaths send a request asking for a head of size by each way to the
// engine.
var headPaths = []struct {
	name    string
	wantErr string // in the error of a head over the limit
	send    func(ctx context.Context, c *engine.Client, u *url.URL, size int) result
}{
	{name: "hand-written", wantErr: fmt.Sprintf("engine response head larger than %d bytes", headLimit),
		send: func(ctx context.Context, c *engine.Client, u *url.URL, size int) result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("{}"))
			req.Header.Set("X-Head-Size", strconv.Itoa(size))
			return read(c.Do(req, []byte("{}")))
		}},
	{name: "net/http, streamed body", wantErr: strconv.Itoa(headLimit),
		send: func(ctx context.Context, c *engine.Client, u *url.URL, size int) result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bufio.NewReader(strings.NewReader("{}")))
			req.Header.Set("X-Head-Size", strconv.Itoa(size))
			return read(c.Do(req, nil))
		}},
	{name: "HTTPClient", wantErr: strconv.Itoa(headLimit),
		send: func(ctx context.Context, c *engine.Client, u *url.URL, size int) result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			req.Header.Set("X-Head-Size", strconv.Itoa(size))
			return read(c.HTTPClient().Do(req))
		}},
}

// TestResponseHeadLimit: on every path, an answer whose head passes
// MaxResponseHeaderBytes fails its request and its connection is closed,
// never pooled: the next request dials a new one. A head under the limit
// is served and its connection kept.
func TestResponseHeadLimit(t *testing.T) {
	sizes := []struct {
		name      string
		size      int
		wantConns int64 // after a second, small request
	}{
		{name: "under the limit", size: headLimit / 4, wantConns: 1},
		{name: "over the limit", size: 64 << 10, wantConns: 2},
	}
	for _, path := range headPaths {
		for _, sz := range sizes {
			t.Run(path.name+"/"+sz.name, func(t *testing.T) {
				eng := headEngine(t)
				c := newClient(t, engine.Options{URL: eng.url(), MaxResponseHeaderBytes: headLimit})
				r := path.send(t.Context(), c, eng.url(), sz.size)
				over := sz.size > headLimit
				switch {
				case !over && (r.err != nil || r.status != http.StatusOK):
					t.Fatalf("head of %d bytes: %d %v, want 200", sz.size, r.status, r.err)
				case over && r.err == nil:
					t.Fatalf("head of %d bytes: status %d, want an error", sz.size, r.status)
				case over && !strings.Contains(r.err.Error(), path.wantErr):
					t.Errorf("head of %d bytes: error %q, want it to say %q", sz.size, r.err, path.wantErr)
				}
				if over {
					receive(t, "the engine to see the connection closed", eng.closed)
				}
				if r := path.send(t.Context(), c, eng.url(), 10); r.err != nil || r.status != http.StatusOK {
					t.Fatalf("a small head next: %d %v", r.status, r.err)
				}
				if n := eng.conns.Load(); n != sz.wantConns {
					t.Errorf("%d engine connections, want %d", n, sz.wantConns)
				}
			})
		}
	}
}

// TestResponseHeadLimitCountsInterimAnswers: on the hand-written path the
// limit bounds all the heads of one answer, interim ones included, so that
// an engine cannot send interim answers without end.
func TestResponseHeadLimitCountsInterimAnswers(t *testing.T) {
	hints := "HTTP/1.1 103 Early Hints\r\nLink: " + strings.Repeat("l", headLimit/3) + "\r\n\r\n"
	tests := []struct {
		name    string
		interim int
		wantErr bool
	}{
		{name: "one interim answer", interim: 1, wantErr: false},
		{name: "three interim answers", interim: 3, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
				_, _ = w.WriteString(strings.Repeat(hints, tc.interim))
				ok200(w, "{}")
				return true
			})
			c := newClient(t, engine.Options{URL: eng.url(), MaxResponseHeaderBytes: headLimit})
			r := post(t.Context(), c, eng.url(), "{}")
			if gotErr := r.err != nil; gotErr != tc.wantErr {
				t.Errorf("%d interim heads of %d bytes under a limit of %d: %d %v; want an error: %v",
					tc.interim, len(hints), headLimit, r.status, r.err, tc.wantErr)
			}
		})
	}
}
