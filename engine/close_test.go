package engine_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/slotgate/slotgate/engine"
)

// TestCloseClosesIdleConnectionsOfBothPaths: Close closes the idle
// connections of the hand-written path and of net/http's Transport alike,
// and the client still works after it.
func TestCloseClosesIdleConnectionsOfBothPaths(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	c := newClient(t, engine.Options{URL: srv})
	if r := post(t.Context(), c, srv, "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("hand-written path: %d %v", r.status, r.err)
	}
	if r := postStreamed(t.Context(), c, srv, "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("net/http path: %d %v", r.status, r.err)
	}
	if o, cl := conns.opened.Load(), conns.closed.Load(); o != 2 || cl != 0 {
		t.Fatalf("before Close: %d connections opened, %d closed; want 2 and 0", o, cl)
	}
	c.Close()
	waitFor(t, "both idle connections to close", func() bool { return conns.closed.Load() == 2 })

	if r := post(t.Context(), c, srv, "{}"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("after Close: %d %v", r.status, r.err)
	}
}
