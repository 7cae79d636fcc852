package fastplane_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/fastplane"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 10 * time.Second

// plane is a fastplane.Server on 127.0.0.1 in front of engine, admitted
// by a gate of n slots and a queue of q.
type plane struct {
	url     string
	gate    *gate.Gate
	obs     *outcomes
	changed chan struct{} // a signal each time the gate's state may have changed
}

func startPlane(t *testing.T, engine *httptest.Server, n, q int) *plane {
	t.Helper()
	lim, err := limiter.New(limiter.Options{Slots: n, QueueLen: q})
	if err != nil {
		t.Fatal(err)
	}
	p := &plane{obs: newOutcomes(), changed: make(chan struct{}, 1)}
	p.gate, err = gate.New(gate.Options{Limiter: lim, Observer: p.obs, NoAbortGrace: true, Changed: func() {
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(engine.URL)
	s, err := fastplane.New(fastplane.Options{Engine: u, Gate: p.gate, RetryAfter: time.Second,
		PassthroughPaths: []string{"/health"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	p.url = "http://" + ln.Addr().String()
	return p
}

// until waits, on the gate's changes, for cond.
func (p *plane) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	for !cond() {
		select {
		case <-p.changed:
		case <-p.obs.done:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// outcomes is a gate.Observer that keeps the outcomes reported.
type outcomes struct {
	mu   sync.Mutex
	seen map[string]int
	done chan struct{} // a signal per request reported
}

func newOutcomes() *outcomes {
	return &outcomes{seen: map[string]int{}, done: make(chan struct{}, 1)}
}

func (o *outcomes) RequestDone(outcome, _, _ string) {
	o.mu.Lock()
	o.seen[outcome]++
	o.mu.Unlock()
	select {
	case o.done <- struct{}{}:
	default:
	}
}
func (o *outcomes) QueueWait(string, float64) {}
func (o *outcomes) FirstByte(float64)         {}
func (o *outcomes) Received()                 {}
func (o *outcomes) Decided(string)            {}

func (o *outcomes) count(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[outcome]
}

// heldEngine answers /hold only once release is closed, /sse with the
// events it is handed, one flushed write each, and anything else with a
// small JSON echo of the request id it got.
type heldEngine struct {
	*httptest.Server
	release chan struct{}
	held    chan struct{} // a signal per /hold request arrived
	events  chan string   // "" ends the stream
	mu      sync.Mutex
	paths   []string
}

func newEngine(t *testing.T) *heldEngine {
	t.Helper()
	e := &heldEngine{release: make(chan struct{}), held: make(chan struct{}, 16), events: make(chan string)}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(func() {
		e.open()
		e.Close()
	})
	return e
}

func (e *heldEngine) open() {
	select {
	case <-e.release:
	default:
		close(e.release)
	}
}

func (e *heldEngine) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.paths = append(e.paths, r.URL.Path)
	e.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	switch r.URL.Path {
	case "/hold":
		e.held <- struct{}{}
		select {
		case <-e.release:
		case <-r.Context().Done():
		}
	case "/sse":
		w.Header().Set("Content-Type", "text/event-stream")
		for ev := range e.events {
			if ev == "" {
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q}`, r.Header.Get("X-Request-Id"))
}

func (e *heldEngine) seen(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, p := range e.paths {
		if p == path {
			n++
		}
	}
	return n
}
