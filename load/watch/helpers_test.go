package watch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/watch"
)

// pipeNet is an in-memory network for tests in a synctest bubble, where a
// real socket would stop the fake clock: each dial is a net.Pipe, whose
// other end the listener at the address accepts.
type pipeNet struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
	dials     map[string]int
}

func newPipeNet() *pipeNet {
	return &pipeNet{listeners: make(map[string]*pipeListener), dials: make(map[string]int)}
}

var errRefused = errors.New("connection refused")

func (n *pipeNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.dials[addr]++
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errRefused}
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
	return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errRefused}
}

// dialCount returns how many dials were made to addr.
func (n *pipeNet) dialCount(addr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials[addr]
}

// client returns an HTTP client on n; the test's cleanup closes its idle
// connections.
func (n *pipeNet) client(t *testing.T) *http.Client {
	tr := &http.Transport{DialContext: n.dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// serve serves h at addr until the returned server is closed, at the
// latest by the test's cleanup.
func (n *pipeNet) serve(t *testing.T, addr string, h http.Handler) *http.Server {
	l := &pipeListener{n: n, addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	n.mu.Lock()
	if n.listeners[addr] != nil {
		n.mu.Unlock()
		t.Fatalf("%s already listened on", addr)
	}
	n.listeners[addr] = l
	n.mu.Unlock()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return srv
}

type pipeListener struct {
	n     *pipeNet
	addr  string
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
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.listeners, l.addr)
		l.n.mu.Unlock()
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr(l.addr) }

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// sidecar is the admin side of a slotgate sidecar: a real report.Hub
// behind report.NewHandler, whose busy verdict the test sets.
type sidecar struct {
	busy    atomic.Bool
	hub     *report.Hub
	srv     *http.Server
	stopHub context.CancelFunc
	hubDone chan struct{}
}

// startSidecar serves a sidecar at addr on n until the test ends.
func startSidecar(t *testing.T, n *pipeNet, addr string, busy bool) *sidecar {
	sc := &sidecar{hubDone: make(chan struct{})}
	sc.busy.Store(busy)
	hub, err := report.NewHub(report.HubOptions{Compute: func() report.Snapshot {
		b := sc.busy.Load()
		return report.Snapshot{Busy: b, Ranks: []report.Rank{{Busy: b}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	sc.hub = hub
	ctx, cancel := context.WithCancel(context.Background())
	sc.stopHub = cancel
	go func() {
		defer close(sc.hubDone)
		_ = hub.Run(ctx)
	}()
	sc.srv = n.serve(t, addr, report.NewHandler(hub))
	t.Cleanup(sc.stopHeartbeats)
	return sc
}

// setBusy changes the sidecar's busy verdict.
func (sc *sidecar) setBusy(b bool) {
	sc.busy.Store(b)
	sc.hub.Notify()
}

// stopHeartbeats stops the Hub: the sidecar still answers, with the last
// snapshot, and then ends the stream (report.ErrStopped).
func (sc *sidecar) stopHeartbeats() {
	sc.stopHub()
	<-sc.hubDone
}

// close stops the sidecar altogether.
func (sc *sidecar) close() {
	sc.srv.Close()
	sc.stopHeartbeats()
}

// serveScript serves at addr the response script writes for each
// connection, numbered from 0. The response is flushed, then ends if
// script returned false, else stays open until the client leaves.
func serveScript(t *testing.T, n *pipeNet, addr string, script func(conn int, w http.ResponseWriter) (keepOpen bool)) {
	var conns atomic.Int64
	n.serve(t, addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keepOpen := script(int(conns.Add(1)-1), w)
		http.NewResponseController(w).Flush()
		if keepOpen {
			<-r.Context().Done()
		}
	}))
}

// writeSSE starts an event stream and writes chunks to it; it returns
// true, to keep the stream open.
func writeSSE(w http.ResponseWriter, chunks ...string) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		_, _ = w.Write([]byte(c))
	}
	return true
}

// loadEvent is the stream event of a snapshot.
func loadEvent(t *testing.T, seq uint64, at time.Time, busy bool) string {
	t.Helper()
	data, err := json.Marshal(&report.Snapshot{Seq: seq, At: at, Busy: busy, Ranks: []report.Rank{{Busy: busy}}})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("event: load\nid: %d\ndata: %s\n\n", seq, data)
}

// newWatcher returns a Watcher on n, logging to the returned recorder.
func newWatcher(t *testing.T, n *pipeNet, opts watch.Options) (*watch.Watcher, *logRecorder) {
	t.Helper()
	logs := &logRecorder{}
	opts.Logger = slog.New(logHandler{rec: logs})
	if opts.Client == nil {
		opts.Client = n.client(t)
	}
	w, err := watch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, logs
}

// run runs w until the test ends, and checks that Run then returns nil.
func run(t *testing.T, w *watch.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

func mustAdd(t *testing.T, w *watch.Watcher, name, adminURL string) {
	t.Helper()
	if err := w.Add(name, adminURL); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits on Changed until cond holds, and fails the test after a
// minute (of fake time, in a bubble). It relies on Changed firing.
func waitFor(t *testing.T, w *watch.Watcher, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		ch := w.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no %s after a minute", what)
		}
	}
}

// waitState waits until name is in state want.
func waitState(t *testing.T, w *watch.Watcher, name string, want watch.State) watch.Status {
	t.Helper()
	var st watch.Status
	waitFor(t, w, fmt.Sprintf("%s %s", name, want), func() bool {
		st, _ = w.Status(name)
		return st.State == want
	})
	return st
}

func status(t *testing.T, w *watch.Watcher, name string) watch.Status {
	t.Helper()
	st, ok := w.Status(name)
	if !ok {
		t.Fatalf("Status(%q): not watched", name)
	}
	return st
}

// logRecorder keeps the log records, one line each: level, message and
// attributes.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

type logHandler struct {
	rec   *logRecorder
	attrs []slog.Attr
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	h.rec.lines = append(h.rec.lines, b.String())
	return nil
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{rec: h.rec, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h logHandler) WithGroup(string) slog.Handler { return h }

// count returns how many lines start with prefix ("WARN expired") and
// contain every one of substrs.
func (l *logRecorder) count(prefix string, substrs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.HasPrefix(line, prefix+" ") && all(line, substrs) {
			n++
		}
	}
	return n
}

func all(s string, substrs []string) bool {
	for _, sub := range substrs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
