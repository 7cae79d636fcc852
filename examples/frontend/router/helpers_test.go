package router_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/watch"
)

// pipeNet is an in-memory network for tests in a synctest bubble, where a
// real socket would stop the fake clock: each dial is a net.Pipe whose
// other end the listener at the address accepts.
type pipeNet struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
}

func newPipeNet() *pipeNet { return &pipeNet{listeners: make(map[string]*pipeListener)} }

func (n *pipeNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
}

// client returns an HTTP client on n; the test's cleanup closes its idle
// connections, whose goroutines would otherwise outlive the bubble.
func (n *pipeNet) client(t *testing.T) *http.Client {
	tr := &http.Transport{DialContext: n.dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// serve serves h at addr (host:port) until the test's cleanup.
func (n *pipeNet) serve(t *testing.T, addr string, h http.Handler) {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	n.mu.Lock()
	n.listeners[addr] = l
	n.mu.Unlock()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		n.mu.Lock()
		delete(n.listeners, addr)
		n.mu.Unlock()
		srv.Close()
		<-served
	})
}

type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// load is what a fake worker's sidecar reports.
type load struct {
	inFlight int
	busy     bool
	kv       float64 // 0..1
}

func (l load) snapshot() report.Snapshot {
	const total = 100
	return report.Snapshot{
		Busy:     l.busy,
		Requests: report.Requests{InFlight: l.inFlight, Limit: 8, QueueLimit: 4},
		Ranks: []report.Rank{{Busy: l.busy,
			KVTotalBlocks: report.Field{N: total, Source: report.SourceEngine},
			KVUsedBlocks:  report.Field{N: int64(l.kv * total), Source: report.SourceEngine}}},
	}
}

// fakeWorker is one worker: a real sidecar load stream (report.Hub, the
// code slotgate serves) on its admin address and a proxy that answers
// with its name, or 529 while refusing is set.
type fakeWorker struct {
	name      string
	load      atomic.Pointer[load]
	hub       *report.Hub
	published atomic.Int64 // snapshots the hub published
	refusing  atomic.Bool
	served    atomic.Int64 // requests answered 200
	refused   atomic.Int64 // requests answered 529
}

func (w *fakeWorker) worker() router.Worker {
	return router.Worker{Name: w.name, Proxy: "http://" + w.name + ":80", Admin: "http://" + w.name + ":90"}
}

// set changes the worker's load; its hub publishes it at once.
func (w *fakeWorker) set(l load) {
	w.load.Store(&l)
	w.hub.Notify()
}

// startWorker serves a fake worker on n with load l. Its hub heartbeats
// every heartbeat; it runs until the test ends.
func startWorker(t *testing.T, n *pipeNet, name string, l load, heartbeat time.Duration) *fakeWorker {
	w := &fakeWorker{name: name}
	w.load.Store(&l)
	hub, err := report.NewHub(report.HubOptions{
		Compute:   func() report.Snapshot { return w.load.Load().snapshot() },
		Heartbeat: heartbeat,
		OnPublish: func(*report.Snapshot) { w.published.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	w.hub = hub
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hub.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	n.serve(t, name+":90", report.NewHandler(hub))
	n.serve(t, name+":80", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if w.refusing.Load() {
			w.refused.Add(1)
			rw.WriteHeader(router.StatusOverloaded)
			fmt.Fprintln(rw, `{"error":{"message":"Server overloaded: worker at capacity"}}`)
			return
		}
		w.served.Add(1)
		fmt.Fprint(rw, w.name)
	}))
	return w
}

// fleet is a Router over fake workers, running until the test ends.
type fleet struct {
	t       *testing.T
	router  *router.Router
	client  *http.Client
	workers []*fakeWorker
}

// startFleet starts a Router over workers with opts (workers are added to
// opts.Workers; Client and Watch.Client are filled in), runs it, and waits
// until each of workers is fresh. Watch.Expiry defaults to 30 s here, so that a test can
// let its hubs stay silent for longer than a cooldown.
func startFleet(t *testing.T, n *pipeNet, opts router.Options, workers ...*fakeWorker) *fleet {
	t.Helper()
	client := n.client(t)
	opts.Client = client
	opts.Watch.Client = client
	if opts.Watch.Expiry == 0 {
		opts.Watch.Expiry = 30 * time.Second
	}
	for _, w := range workers {
		opts.Workers = append(opts.Workers, w.worker())
	}
	r, err := router.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	n.serve(t, "frontend:80", r)
	f := &fleet{t: t, router: r, client: client, workers: workers}
	f.waitFresh()
	return f
}

// waitFresh waits until the bubble is idle, by when every worker's first
// snapshot has arrived, and checks that each is fresh.
func (f *fleet) waitFresh() {
	f.t.Helper()
	synctest.Wait()
	serving := map[string]bool{}
	for _, w := range f.workers {
		serving[w.name] = true
	}
	for _, w := range f.router.Stats().Workers {
		if serving[w.Name] && w.State != watch.Fresh.String() {
			f.t.Fatalf("worker %s is %s, want fresh", w.Name, w.State)
		}
	}
}

// answer is what the client got for one request.
type answer struct {
	status     int
	body       string
	retryAfter string
}

// post sends one request through the router.
func (f *fleet) post(body string) answer {
	f.t.Helper()
	resp, err := f.client.Post("http://frontend:80/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After")}
}
