package health_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	slotengine "github.com/slotgate/slotgate/engine" // health_test's fake engine is "engine"
	"github.com/slotgate/slotgate/health"
)

// TestRedirectIsNotReady: an engine whose health path redirects, even to a
// path that answers 200, is not ready, whichever client polls: the
// prober's own, a plain client that would follow the redirect, or the
// engine client's.
func TestRedirectIsNotReady(t *testing.T) {
	tests := []struct {
		name   string
		client func(t *testing.T, engineURL string) *http.Client
	}{
		{name: "own client", client: func(*testing.T, string) *http.Client { return nil }},
		{name: "a client that follows redirects", client: func(*testing.T, string) *http.Client { return &http.Client{} }},
		{name: "engine.Client.HTTPClient", client: func(t *testing.T, engineURL string) *http.Client {
			u, err := url.Parse(engineURL)
			if err != nil {
				t.Fatal(err)
			}
			c, err := slotengine.New(slotengine.Options{URL: u})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c.HTTPClient()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var polls, followed atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/health" {
					polls.Add(1)
					http.Redirect(w, r, "/ok", http.StatusFound)
					return
				}
				followed.Add(1) // /ok answers 200
			}))
			t.Cleanup(srv.Close)
			client := tc.client(t, srv.URL)
			hadCheck := client != nil && client.CheckRedirect != nil
			p := newProber(t, health.Options{URL: srv.URL + "/health", Interval: interval, Client: client})
			run(t, p)
			// Two polls served means the first one has been recorded.
			eventually(t, "two polls", func() bool { return polls.Load() >= 2 })
			if err := p.Ready(); err == nil || !strings.Contains(err.Error(), "302") {
				t.Errorf("Ready = %v with a health path that redirects, want an error naming status 302", err)
			}
			if n := followed.Load(); n != 0 {
				t.Errorf("the redirect was followed %d times, want never", n)
			}
			if client != nil && (client.CheckRedirect != nil) != hadCheck {
				t.Error("New changed the caller's client's CheckRedirect")
			}
		})
	}
}

// TestReadyThroughEngineClient: the client slotgate passes, the engine
// client's, polls the engine.
func TestReadyThroughEngineClient(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := slotengine.New(slotengine.Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval, Client: c.HTTPClient()})
	run(t, p)
	eventually(t, "Ready to return nil", func() bool { return p.Ready() == nil })
}
