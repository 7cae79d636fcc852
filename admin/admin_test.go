package admin_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slotgate/slotgate/admin"
)

// fixture is an admin server over real loopback HTTP whose options record
// what they are asked.
type fixture struct {
	srv         *httptest.Server
	drains      atomic.Int64
	metricsHits atomic.Int64

	mu       sync.Mutex
	readyErr error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	h, err := admin.NewHandler(admin.Options{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			f.metricsHits.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "fake_metric 1\n")
		}),
		Ready: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.readyErr
		},
		Drain: func() { f.drains.Add(1) },
	})
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) setReady(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readyErr = err
}

func (f *fixture) do(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, string(body)
}

func TestLivez(t *testing.T) {
	f := newFixture(t)
	f.setReady(errors.New("engine down")) // liveness does not depend on readiness
	resp, body := f.do(t, http.MethodGet, "/livez")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /livez: status %d, want 200", resp.StatusCode)
	}
	if body != "ok\n" {
		t.Errorf("GET /livez: body %q, want %q", body, "ok\n")
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("GET /livez: Cache-Control %q, want no-store", got)
	}
}

func TestReadyz(t *testing.T) {
	f := newFixture(t)

	resp, body := f.do(t, http.MethodGet, "/readyz")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("ready: status %d, want 200; body %q", resp.StatusCode, body)
	}
	if body != "ok\n" {
		t.Errorf("ready: body %q, want %q", body, "ok\n")
	}

	f.setReady(errors.New("poll http://engine/health: status 503"))
	resp, body = f.do(t, http.MethodGet, "/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("not ready: status %d, want 503", resp.StatusCode)
	}
	if !strings.Contains(body, "poll http://engine/health: status 503") {
		t.Errorf("not ready: body %q does not give the reason", body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("not ready: Content-Type %q, want text/plain", ct)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("not ready: Cache-Control %q, want no-store", got)
	}

	// Readiness is read on every request, not cached.
	f.setReady(nil)
	if resp, body := f.do(t, http.MethodGet, "/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("ready again: status %d, want 200; body %q", resp.StatusCode, body)
	}
}

func TestDrain(t *testing.T) {
	f := newFixture(t)
	resp, body := f.do(t, http.MethodPost, "/drain")
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("POST /drain: status %d, want 202", resp.StatusCode)
	}
	if body != "draining\n" {
		t.Errorf("POST /drain: body %q, want %q", body, "draining\n")
	}
	if n := f.drains.Load(); n != 1 {
		t.Errorf("POST /drain called Drain %d times, want 1", n)
	}
	// A second preStop (or a retry) calls Drain again; Drain is idempotent.
	if resp, _ := f.do(t, http.MethodPost, "/drain"); resp.StatusCode != http.StatusAccepted {
		t.Errorf("second POST /drain: status %d, want 202", resp.StatusCode)
	}
	if n := f.drains.Load(); n != 2 {
		t.Errorf("two POST /drain called Drain %d times, want 2", n)
	}
}

// TestDrainReturnsAtOnce shows the handler answers as soon as Drain returns:
// it does not wait for anything the drain starts.
func TestDrainReturnsAtOnce(t *testing.T) {
	drained := make(chan struct{})
	started := make(chan struct{})
	h, err := admin.NewHandler(admin.Options{
		Metrics: http.NotFoundHandler(),
		Ready:   func() error { return nil },
		Drain: func() {
			close(started)
			// Start draining in the background, as the real Drain does; the
			// drain ends only when the test says so.
			go func() { <-drained }()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer close(drained)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/drain", nil))
	select {
	case <-started:
	default:
		t.Fatal("POST /drain did not call Drain")
	}
	if rec.Code != http.StatusAccepted {
		t.Errorf("POST /drain: status %d, want 202 while draining goes on", rec.Code)
	}
}

func TestWrongMethods(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodGet, "/drain", "POST"},
		{http.MethodPut, "/drain", "POST"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
		{http.MethodPost, "/readyz", "GET, HEAD"},
		{http.MethodDelete, "/livez", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, _ := f.do(t, tt.method, tt.path)
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("status %d, want 405", resp.StatusCode)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
	if n := f.drains.Load(); n != 0 {
		t.Errorf("wrong methods called Drain %d times, want 0", n)
	}
	if n := f.metricsHits.Load(); n != 0 {
		t.Errorf("wrong methods reached the metrics handler %d times, want 0", n)
	}
}

func TestMetricsServedByGivenHandler(t *testing.T) {
	f := newFixture(t)
	resp, body := f.do(t, http.MethodGet, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: status %d, want 200", resp.StatusCode)
	}
	if body != "fake_metric 1\n" {
		t.Errorf("GET /metrics: body %q, want the given handler's", body)
	}
	if n := f.metricsHits.Load(); n != 1 {
		t.Errorf("metrics handler called %d times, want 1", n)
	}
}

func TestUnknownPaths(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/index.html", "/healthz", "/health", "/metrics/x", "/drainx", "/v1/chat/completions"} {
		t.Run(path, func(t *testing.T) {
			resp, _ := f.do(t, http.MethodGet, path)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
			}
		})
	}
	if n := f.metricsHits.Load(); n != 0 {
		t.Errorf("unknown paths reached the metrics handler %d times", n)
	}
	if n := f.drains.Load(); n != 0 {
		t.Errorf("unknown paths called Drain %d times", n)
	}
}

func TestNewHandlerRequiresEveryOption(t *testing.T) {
	metrics := http.NotFoundHandler()
	ready := func() error { return nil }
	drain := func() {}
	tests := []struct {
		name string
		opts admin.Options
	}{
		{"no metrics", admin.Options{Ready: ready, Drain: drain}},
		{"no ready", admin.Options{Metrics: metrics, Drain: drain}},
		{"no drain", admin.Options{Metrics: metrics, Ready: ready}},
		{"nothing", admin.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := admin.NewHandler(tt.opts)
			if err == nil {
				t.Fatal("NewHandler succeeded, want an error")
			}
			if h != nil {
				t.Errorf("NewHandler returned a handler with its error")
			}
		})
	}
	if _, err := admin.NewHandler(admin.Options{Metrics: metrics, Ready: ready, Drain: drain}); err != nil {
		t.Errorf("NewHandler with every option: %v", err)
	}
}

// TestProfilingOnlyWhenAsked: /debug/pprof/ is there with Profiling and
// absent (404) without it. (Importing net/http/pprof also registers its
// handlers on http.DefaultServeMux, which slotgate never serves.)
func TestProfilingOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		profiling bool
		want      int
	}{{false, http.StatusNotFound}, {true, http.StatusOK}} {
		h, err := admin.NewHandler(admin.Options{
			Metrics:   http.NotFoundHandler(),
			Ready:     func() error { return nil },
			Drain:     func() {},
			Profiling: tc.profiling,
		})
		if err != nil {
			t.Fatalf("NewHandler: %v", err)
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
			if rr.Code != tc.want {
				t.Errorf("profiling %v: GET %s = %d, want %d", tc.profiling, path, rr.Code, tc.want)
			}
		}
	}
}
