package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
)

// rawPost is a whole POST of body, as the proxy's front end writes one.
func rawPost(u *url.URL, body string) []byte {
	return fmt.Appendf(nil, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, len(body), body)
}

func sendRaw(c *engine.Client, raw []byte, replayable bool) result {
	return read(c.SendRaw(new(engine.Cut), raw, replayable))
}

// TestSendRaw: a request written whole reaches the engine as written and
// its answer comes back; requests in turn share one keep-alive
// connection with Do's.
func TestSendRaw(t *testing.T) {
	var paths []string
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, req *http.Request) bool {
		paths = append(paths, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type"))
		ok200(w, `{"n":1}`)
		return true
	})
	c := newClient(t, engine.Options{URL: eng.url()})
	if !c.Raw() {
		t.Fatal("Raw() is false for an http engine")
	}
	for i := range 3 {
		body := fmt.Sprintf(`{"prompt":"%d"}`, i)
		if r := sendRaw(c, rawPost(eng.url(), body), false); r.err != nil || r.status != http.StatusOK || r.body != `{"n":1}` {
			t.Fatalf("request %d: %d %q %v", i, r.status, r.body, r.err)
		}
		if got := eng.body(i); got != body {
			t.Errorf("request %d: the engine read %q, want %q", i, got, body)
		}
	}
	if r := post(t.Context(), c, eng.url(), "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("Do after SendRaw: %d %v", r.status, r.err)
	}
	if n := eng.conns.Load(); n != 1 {
		t.Errorf("4 requests in turn used %d engine connections, want 1", n)
	}
	if want := "POST /v1/completions application/json"; len(paths) == 0 || paths[0] != want {
		t.Errorf("the engine saw %q, want %q first", paths, want)
	}
	if https := newClient(t, engine.Options{URL: &url.URL{Scheme: "https", Host: "engine"}}); https.Raw() {
		t.Error("Raw() is true for an https engine")
	}
}

// TestSendRawNotResent: a generation the engine read and dropped is not
// sent again; one that may be replayed is, once, on a new connection.
func TestSendRawNotResent(t *testing.T) {
	for _, replayable := range []bool{false, true} {
		t.Run(fmt.Sprint("replayable=", replayable), func(t *testing.T) {
			eng := newRawEngine(t, dropSecond)
			c := newClient(t, engine.Options{URL: eng.url()})
			if r := sendRaw(c, rawPost(eng.url(), "{}"), replayable); r.err != nil {
				t.Fatal(r.err)
			}
			r := sendRaw(c, rawPost(eng.url(), "{}"), replayable)
			want := int64(2)
			if replayable {
				want = 3
			}
			if (r.err == nil) != replayable || eng.requests.Load() != want {
				t.Errorf("dropped: err %v, the engine got %d requests; want %d", r.err, eng.requests.Load(), want)
			}
		})
	}
}

// TestSendRawCancelled: the caller's Cut cuts the wait for the answer
// short; a Cut made before the exchange fails it at once.
func TestSendRawCancelled(t *testing.T) {
	release := make(chan struct{})
	eng := newRawEngine(t, func(w *bufio.Writer, _ int, _ *http.Request) bool {
		<-release
		return false
	})
	t.Cleanup(func() { close(release) }) // before the engine's cleanup, which waits for it
	c := newClient(t, engine.Options{URL: eng.url()})
	cut := new(engine.Cut)
	done := make(chan error, 1)
	go func() {
		resp, err := c.SendRaw(cut, rawPost(eng.url(), "{}"), false)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			err = errors.New("answered")
		}
		done <- err
	}()
	waitFor(t, "the engine to read the request", func() bool { return eng.requests.Load() == 1 })
	cut.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("SendRaw did not return once cut")
	}
	if _, err := c.SendRaw(cut, rawPost(eng.url(), "{}"), false); !errors.Is(err, context.Canceled) {
		t.Errorf("a second exchange of a Cut already cut: %v, want context.Canceled", err)
	}
	if n := eng.requests.Load(); n != 1 {
		t.Errorf("the engine got %d requests, want 1", n)
	}
}
