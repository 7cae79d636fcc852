package engine_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/engine"
)

func TestNewValidates(t *testing.T) {
	good := &url.URL{Scheme: "http", Host: "127.0.0.1:8000"}
	tests := []struct {
		name    string
		opts    engine.Options
		wantErr []string // each in the error; none: New succeeds
	}{
		{name: "http", opts: engine.Options{URL: good}},
		{name: "https with every option", opts: engine.Options{URL: &url.URL{Scheme: "https", Host: "engine"},
			Pool: 8, DialTimeout: time.Second, MaxResponseHeaderBytes: 1 << 10}},
		{name: "no URL", opts: engine.Options{}, wantErr: []string{"URL is required"}},
		{name: "other scheme", opts: engine.Options{URL: &url.URL{Scheme: "unix", Host: "x"}}, wantErr: []string{"http or https"}},
		{name: "no host", opts: engine.Options{URL: &url.URL{Scheme: "http", Path: "/v1"}}, wantErr: []string{"no host"}},
		{name: "every negative number, all reported", opts: engine.Options{URL: good, Pool: -1, DialTimeout: -1,
			MaxResponseHeaderBytes: -1}, wantErr: []string{"pool", "dial timeout", "header limit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := engine.New(tc.opts)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("New = %v, want success", err)
				}
				c.Close()
				return
			}
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New = %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// TestHTTPClient: the client for small requests goes through no
// environment proxy, applies the header limit, and returns a redirect as
// it came rather than following it.
func TestHTTPClient(t *testing.T) {
	var elsewhere atomic.Int64
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		elsewhere.Add(1)
	}))
	c := newClient(t, engine.Options{URL: srv, MaxResponseHeaderBytes: 12345})
	hc := c.HTTPClient()
	tr, ok := hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("HTTPClient's transport is %T, want *http.Transport", hc.Transport)
	}
	if tr.Proxy != nil || tr.MaxResponseHeaderBytes != 12345 {
		t.Errorf("transport: Proxy set %v, MaxResponseHeaderBytes %d; want no proxy and 12345",
			tr.Proxy != nil, tr.MaxResponseHeaderBytes)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.JoinPath("/health").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := read(hc.Do(req))
	if r.err != nil || r.status != http.StatusFound {
		t.Errorf("GET of a redirect: %d %v, want the 302 itself", r.status, r.err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times, want never", n)
	}
}
