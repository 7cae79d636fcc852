package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// readOnce is a streamed request body (no Len, no GetBody: net/http's
// transport would not take it as in memory) that counts its reads and
// closes, and may break after some bytes.
type readOnce struct {
	r       io.Reader
	breakAt int // > 0: the read that passes this many bytes fails
	n       int
	reads   int
	closes  int
}

var errBroken = errors.New("the client's upload broke")

func (b *readOnce) Read(p []byte) (int, error) {
	b.reads++
	if b.breakAt > 0 && b.n >= b.breakAt {
		return 0, errBroken
	}
	k, err := b.r.Read(p)
	b.n += k
	return k, err
}

func (b *readOnce) Close() error { b.closes++; return nil }

// TestStreamedBodyTakesHandWrittenPath: a body read as it is sent, of a
// declared length, goes the hand-written way, in writes of at most
// StreamBuf (never copied whole), reaches the engine byte for byte, and
// is closed once.
func TestStreamedBodyTakesHandWrittenPath(t *testing.T) {
	srv := echoServer(t)
	for _, size := range []int{100, StreamBuf - 200, 3*StreamBuf + 17} {
		c := newTestClient(t, srv)
		var direct, transport writeCount
		c.direct.dial = direct.dial(c.direct.dial)
		c.tr.DialContext = transport.dial(c.tr.DialContext)
		want := strings.Repeat("0123456789", size/10+1)[:size]
		body := &readOnce{r: strings.NewReader(want)}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+srv+"/", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(size)
		resp, err := c.Do(req, nil)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(got) != want {
			t.Fatalf("%d bytes: the engine echoed %d bytes (%v), not the body", size, len(got), err)
		}
		if n, most := direct.n(), size/StreamBuf+2; n < 1 || n > most || transport.n() != 0 {
			t.Errorf("%d bytes: %d writes on the hand-written path (want 1 to %d), %d on net/http's",
				size, n, most, transport.n())
		}
		if body.closes != 1 {
			t.Errorf("%d bytes: body closed %d times, want once", size, body.closes)
		}
	}
}

// TestStreamedBodyNeverSentTwice: a streamed body that breaks half-way
// fails the request with the body's error, on one connection: what was
// read of it is gone, so no retry sends the rest as a request.
func TestStreamedBodyNeverSentTwice(t *testing.T) {
	srv := echoServer(t)
	c := newTestClient(t, srv)
	next := c.direct.dial
	var n int // dials, all on this goroutine
	c.direct.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n++
		return next(ctx, network, addr)
	}
	body := &readOnce{r: strings.NewReader(strings.Repeat("x", 4*StreamBuf)), breakAt: 2 * StreamBuf}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+srv+"/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 4 * StreamBuf
	resp, err := c.Do(req, nil)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("a broken upload was answered")
	}
	if !errors.Is(err, errBroken) {
		t.Errorf("error %v, want the body's own", err)
	}
	if n != 1 || body.closes != 1 {
		t.Errorf("%d connections dialled, body closed %d times; want 1 and 1", n, body.closes)
	}
}
