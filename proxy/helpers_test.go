package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// bound is how long any wait in these tests may last before it is a
// failure. It bounds waits; no assertion depends on elapsed time.
const bound = 10 * time.Second

// recObserver is a gate.Observer that records every call.
type recObserver struct {
	mu         sync.Mutex
	done       map[string]int
	decided    map[string]int
	byClass    map[string]int // "outcome/class"
	protocols  map[string]int
	queueWaits []float64
	firstBytes []float64
}

func newRecObserver() *recObserver {
	return &recObserver{done: make(map[string]int), decided: make(map[string]int), byClass: make(map[string]int),
		protocols: make(map[string]int)}
}

func (o *recObserver) RequestDone(outcome, class, protocol string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done[outcome]++
	o.byClass[outcome+"/"+class]++
	o.protocols[protocol]++
}

func (o *recObserver) Received() {}

func (o *recObserver) Decided(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decided[outcome]++
}

func (o *recObserver) classCount(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byClass[key]
}

func (o *recObserver) QueueWait(_ string, seconds float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queueWaits = append(o.queueWaits, seconds)
}

func (o *recObserver) FirstByte(seconds float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.firstBytes = append(o.firstBytes, seconds)
}

// snapshot is a copy of what an observer recorded.
type snapshot struct {
	done       map[string]int
	decided    map[string]int
	protocols  map[string]int
	queueWaits []float64
	firstBytes []float64
}

func (o *recObserver) snapshot() snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := snapshot{
		done:       make(map[string]int, len(o.done)),
		decided:    make(map[string]int, len(o.decided)),
		protocols:  make(map[string]int, len(o.protocols)),
		queueWaits: append([]float64(nil), o.queueWaits...),
		firstBytes: append([]float64(nil), o.firstBytes...),
	}
	for k, v := range o.done {
		s.done[k] = v
	}
	for k, v := range o.decided {
		s.decided[k] = v
	}
	for k, v := range o.protocols {
		s.protocols[k] = v
	}
	return s
}

func (o *recObserver) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, v := range o.done {
		n += v
	}
	return n
}

func (s snapshot) total() int {
	n := 0
	for _, v := range s.done {
		n += v
	}
	return n
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", bound, what)
		}
		<-tick.C
	}
}

// receive waits for one value from ch, failing the test after bound.
func receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("timed out after %s waiting for %s", bound, what)
		panic("unreachable")
	}
}

// engineRecorder records the requests an engine receives, by path.
type engineRecorder struct {
	mu   sync.Mutex
	seen []*http.Request // clones, bodies not kept
}

func (e *engineRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Clone(context.Background()))
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// count returns how many requests for path the engine received.
func (e *engineRecorder) count(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.seen {
		if r.URL.Path == path {
			n++
		}
	}
	return n
}

// last returns the last request for path, or nil.
func (e *engineRecorder) last(path string) *http.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.seen) - 1; i >= 0; i-- {
		if e.seen[i].URL.Path == path {
			return e.seen[i]
		}
	}
	return nil
}

// heldEngine is an engine path that holds requests until opened: it takes the
// limiter's slots for as long as a test needs them.
type heldEngine struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newHeldEngine() *heldEngine {
	return &heldEngine{entered: make(chan struct{}, 1024), open: make(chan struct{})}
}

func (g *heldEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.entered <- struct{}{}
	select {
	case <-g.open:
		_, _ = io.WriteString(w, "held\n")
	case <-r.Context().Done():
	}
}

func (g *heldEngine) release() { g.once.Do(func() { close(g.open) }) }

// harness is a proxy served by a real net/http server in front of an
// engine, with a client, a recording observer and an observed access log.
type harness struct {
	t      testing.TB
	lim    *limiter.Limiter
	proxy  *proxy.Proxy
	obs    *recObserver
	access *observer.ObservedLogs
	engine *engineRecorder
	front  *httptest.Server
	client *http.Client
	conns  atomic.Int64 // connections the front server accepted
}

type harnessConfig struct {
	// engine serves the engine; nil with engineURL set uses that URL.
	engine    http.Handler
	engineURL *url.URL
	// limiter is used as is when set; otherwise limits builds one.
	limiter *limiter.Limiter
	limits  limiter.Options
	// options adjusts the proxy's options before New.
	options func(*proxy.Options)
	// gate adjusts the gate's options before gate.New.
	gate func(*gate.Options)
	// wrap wraps the proxy in the front server.
	wrap func(http.Handler) http.Handler
	// h2c serves and sends cleartext HTTP/2 with prior knowledge, as
	// cmd/slotgate allows, instead of HTTP/1.1.
	h2c bool
}

func newHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, obs: newRecObserver(), engine: &engineRecorder{}}
	engineURL := cfg.engineURL
	if cfg.engine != nil {
		eng := httptest.NewServer(h.engine.wrap(cfg.engine))
		t.Cleanup(eng.Close)
		u, err := url.Parse(eng.URL)
		if err != nil {
			t.Fatal(err)
		}
		engineURL = u
	}
	h.lim = cfg.limiter
	if h.lim == nil {
		lim, err := limiter.New(cfg.limits)
		if err != nil {
			t.Fatal(err)
		}
		h.lim = lim
	}
	core, logs := observer.New(zapcore.InfoLevel)
	h.access = logs
	gopts := gate.Options{Limiter: h.lim, Observer: h.obs}
	if cfg.gate != nil {
		cfg.gate(&gopts)
	}
	g, err := gate.New(gopts)
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	opts := proxy.Options{
		Engine:    engineURL,
		Gate:      g,
		AccessLog: zap.New(core), // the default engine client, as slotgate runs
	}
	if cfg.options != nil {
		cfg.options(&opts)
	}
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	h.proxy = p
	var handler http.Handler = p
	if cfg.wrap != nil {
		handler = cfg.wrap(p)
	}
	h.front = httptest.NewUnstartedServer(handler)
	h.front.Config.ConnContext = proxy.ConnContext
	h.front.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}
	clientTransport := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	if cfg.h2c {
		var server, client http.Protocols
		server.SetHTTP1(true)
		server.SetUnencryptedHTTP2(true)
		client.SetUnencryptedHTTP2(true)
		h.front.Config.Protocols = &server
		clientTransport.Protocols = &client
	}
	h.front.Start()
	t.Cleanup(h.front.Close)
	h.client = &http.Client{Transport: clientTransport}
	t.Cleanup(h.client.CloseIdleConnections)
	return h
}

func (h *harness) url(path string) string { return h.front.URL + path }

// result is a finished client exchange.
type result struct {
	status int
	header http.Header
	body   string
	close  bool // the server closes the connection after the answer
	err    error
}

// do sends req, reads the whole answer and returns it; it never hangs past
// bound.
func (h *harness) do(req *http.Request) result {
	ctx, cancel := context.WithTimeout(req.Context(), bound)
	defer cancel()
	resp, err := h.client.Do(req.WithContext(ctx))
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), close: resp.Close, err: err}
}

// get sends a GET for path.
func (h *harness) get(path string) result {
	req, err := http.NewRequest(http.MethodGet, h.url(path), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(req)
}

// goDo sends req in a goroutine; the answer arrives on the channel.
func (h *harness) goDo(req *http.Request) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- h.do(req) }()
	return ch
}

// hold sends a GET to the held engine's path and waits until the engine has it, so
// that the request holds a slot. The answer arrives on the channel once the
// held engine opens.
func (h *harness) hold(g *heldEngine, path string) <-chan result {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.url(path), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	ch := h.goDo(req)
	receive(h.t, "the holder to reach the engine", g.entered)
	return ch
}

// waitStats polls the limiter until cond holds.
func (h *harness) waitStats(what string, cond func(s limiter.Stats) bool) limiter.Stats {
	h.t.Helper()
	var s limiter.Stats
	waitFor(h.t, what, func() bool {
		s = h.lim.Stats()
		return cond(s)
	})
	return s
}

// waitDone waits until the observer has n requests and returns what it has.
func (h *harness) waitDone(n int) snapshot {
	h.t.Helper()
	waitFor(h.t, "the observer to have requests", func() bool { return h.obs.total() >= n })
	s := h.obs.snapshot()
	if s.total() != n {
		h.t.Fatalf("observer has %d requests (%v), want %d", s.total(), s.done, n)
	}
	if len(s.protocols) != 1 || s.protocols[string(gate.ProtocolHTTP)] != n {
		h.t.Errorf("observer has requests by protocol %v, want all %d of http", s.protocols, n)
	}
	return s
}

// waitOutcome waits for the one request of a test and checks how it ended.
func (h *harness) waitOutcome(want gate.Outcome) snapshot {
	h.t.Helper()
	s := h.waitDone(1)
	if s.done[string(want)] != 1 {
		h.t.Errorf("outcomes = %v, want one %s", s.done, want)
	}
	return s
}

// accessLines returns the access-log lines as maps of their fields.
func (h *harness) accessLines() []map[string]any {
	var out []map[string]any
	for _, e := range h.access.All() {
		out = append(out, e.ContextMap())
	}
	return out
}

// rawConn dials the front server for hand-written HTTP/1.1.
func (h *harness) rawConn() (net.Conn, *bufio.Reader) {
	h.t.Helper()
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(bound)); err != nil {
		h.t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// closedURL returns the URL of a loopback port nobody listens on.
func closedURL(t testing.TB) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return &url.URL{Scheme: "http", Host: addr}
}

// rawEngine serves each connection to the returned loopback URL with
// serve, on a goroutine of its own, until the test ends.
func rawEngine(t testing.TB, serve func(net.Conn)) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c) })
		}
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// readThen returns an engine connection handler that reads one request
// whole, body included, and then ends the connection with end, answering
// nothing.
func readThen(end func(net.Conn)) func(net.Conn) {
	return func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
		end(c)
	}
}

// resetConn closes c with a TCP reset rather than a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
