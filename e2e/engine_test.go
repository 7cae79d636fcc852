package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// engine is a real HTTP server on 127.0.0.1 that stands in for an inference
// engine: it counts requests in flight, and can hold them until released.
type engine struct {
	srv     *httptest.Server
	healthy atomic.Bool

	mu          sync.Mutex
	gate        chan struct{} // while not nil, completions wait for it to close
	inFlight    int
	maxInFlight int
	seen        []string          // X-Request-Id of every completion that arrived
	ranks       map[string]string // X-Data-Parallel-Rank of each, by id, when set
	cancelled   []string          // ids whose client went away while held
	change      chan struct{}
}

func newEngine(t *testing.T) *engine {
	e := &engine{change: make(chan struct{}), ranks: make(map[string]string)}
	e.healthy.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if !e.healthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /v1/completions", e.complete)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.release()
		e.srv.Close()
	})
	return e
}

func (e *engine) url() string { return e.srv.URL }

// hold makes completions wait until release.
func (e *engine) hold() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gate == nil {
		e.gate = make(chan struct{})
	}
}

// release lets held and future completions finish.
func (e *engine) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gate != nil {
		close(e.gate)
		e.gate = nil
	}
}

func (e *engine) complete(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	body, _ := io.ReadAll(r.Body)
	if rank := r.Header.Get("X-Data-Parallel-Rank"); rank != "" {
		e.update(func() { e.ranks[id] = rank })
	}
	gate := e.enter(id)
	defer e.leave()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			e.update(func() { e.cancelled = append(e.cancelled, id) })
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q,"object":"text_completion","choices":[{"text":"ok"}],"prompt_bytes":%d}`+"\n", id, len(body))
}

func (e *engine) enter(id string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inFlight++
	e.maxInFlight = max(e.maxInFlight, e.inFlight)
	e.seen = append(e.seen, id)
	e.notifyLocked()
	return e.gate
}

func (e *engine) leave() { e.update(func() { e.inFlight-- }) }

func (e *engine) update(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
	e.notifyLocked()
}

func (e *engine) notifyLocked() {
	close(e.change)
	e.change = make(chan struct{})
}

// stats returns the counts so far.
func (e *engine) stats() (inFlight, maxInFlight int, seen, cancelled []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inFlight, e.maxInFlight, append([]string(nil), e.seen...), append([]string(nil), e.cancelled...)
}

// rankOf returns the X-Data-Parallel-Rank the completion id arrived with.
func (e *engine) rankOf(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ranks[id]
}

// waitInFlight waits until exactly n completions are held in the engine.
func (e *engine) waitInFlight(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d requests in the engine", n), func() bool {
		in, _, _, _ := e.stats()
		return in == n
	})
}
