package proxy

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// DefaultMaxRequestBodyBytes bounds request bodies when Options leave it 0.
const DefaultMaxRequestBodyBytes = 32 << 20

// Options configure a Proxy.
type Options struct {
	// Engine is the engine's base URL. Required.
	Engine *url.URL
	// Gate admits requests. Required.
	Gate *gate.Gate
	// Client reaches the engine; nil means a client of the proxy's own
	// for Engine, with a pool sized for the gate's limiter.
	Client *engine.Client
	// Transport, when set, reaches the engine instead of Client: a request
	// whose body the proxy holds in memory goes to it with that body as a
	// *bytes.Reader. For tests that look at the wire.
	Transport http.RoundTripper
	// OverloadStatus answers capacity rejections and queue timeouts; 0 means
	// 529.
	OverloadStatus int
	// RetryAfter is sent with overload and draining answers, in whole
	// seconds; 0 sends no Retry-After.
	RetryAfter time.Duration
	// MaxRequestBodyBytes bounds request bodies (413 past it); 0 means
	// DefaultMaxRequestBodyBytes.
	MaxRequestBodyBytes int64
	// MaxBufferedBodyBytes bounds the memory held by the bodies read
	// while their requests wait, all together; 0 means
	// DefaultMaxBufferedBodyBytes, and a negative value reads none. A
	// body that does not fit waits unread (see bodyBudget).
	MaxBufferedBodyBytes int64
	// RequestBodyTimeout bounds the time a request's body may take to
	// arrive, from its headers: a slower one is answered 408 and its slot
	// handed on. 0 means no limit. It needs a server whose
	// ResponseWriter supports read deadlines (net/http's do).
	RequestBodyTimeout time.Duration
	// FirstToken is the first-token watchdog of streamed requests; its
	// zero value is off.
	FirstToken FirstToken
	// PassthroughPaths are forwarded without a slot: the engine's probes.
	PassthroughPaths []string
	// FrontPaths are the paths a handler in front of the proxy serves
	// itself (the proxy port's /metrics): AnswerEarly leaves them to it.
	FrontPaths []string
	// LoadReport, when set, puts the load report on proxied answers
	// (ORCA's endpoint-load-metrics).
	LoadReport *LoadReport
	// Relay, when set, carries streamed HTTP/1.1 answers on event loops
	// instead of a goroutine each (--stream-relay epoll).
	Relay *Relay
	// AccessLog gets one line per request, never sampled; nil logs nothing.
	AccessLog *zap.Logger
	// Logger gets operational messages; nil logs nothing.
	Logger *zap.Logger
}

// Proxy is an http.Handler that forwards to the engine through the gate.
type Proxy struct {
	engineURL   *url.URL
	gate        *gate.Gate
	client      *engine.Client
	transport   http.RoundTripper // nil: client
	passthrough map[string]bool
	frontPaths  map[string]bool // Options.FrontPaths
	answers     answers
	maxBody     int64
	budget      *bodyBudget
	bodyTimeout time.Duration
	firstToken  firstTokenGuard
	loadReport  *loadReport
	relay       *Relay
	access      *zap.Logger
	log         *zap.Logger
	errLog      *log.Logger // httputil.ReverseProxy's
	buffers     *bufferPool
	early       earlyBufs // AnswerEarly's
	exchanges   exchanges // of early requests (exchangepool.go)
	counters    counters
	ids         *gate.IDs
	dates       dates // of early answers (early.go)
	// reencodeQueries: GODEBUG sets urlmaxqueryparams, under which
	// ReverseProxy re-encodes every query (see queryKept). Only the
	// variable is read: slotgate's own module sets no //go:debug default
	// (a program embedding the proxy with one would differ).
	reencodeQueries bool
	// earlyServes: the front end may serve requests itself
	// (servesAnyEarly), fixed by New.
	earlyServes bool
	// resuming counts the parked requests decided and handed back to the
	// server whose handler has not taken them yet (park.go).
	resuming atomic.Int64
	// waiting is the Lent of a refused client's connection (earlywait.go).
	waiting *Lent
	// closing: every answer from now on closes its connection
	// (CloseConnections).
	closing atomic.Bool
}

// New checks opts and returns a Proxy.
func New(opts Options) (*Proxy, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{
		engineURL:   opts.Engine,
		gate:        opts.Gate,
		client:      opts.Client,
		transport:   opts.Transport,
		passthrough: make(map[string]bool, len(opts.PassthroughPaths)),
		maxBody:     opts.MaxRequestBodyBytes,
		budget:      newBodyBudget(max(opts.MaxBufferedBodyBytes, 0)),
		bodyTimeout: opts.RequestBodyTimeout,
		loadReport:  newLoadReport(opts.LoadReport),
		relay:       opts.Relay,
		access:      opts.AccessLog,
		log:         opts.Logger,
		buffers:     newBufferPool(),
		ids:         gate.NewIDs(),

		reencodeQueries: strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams="),
	}
	if err := p.setDefaults(opts); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.earlyServes = p.servesAnyEarly()
	for _, path := range opts.PassthroughPaths {
		p.passthrough[path] = true
	}
	p.frontPaths = make(map[string]bool, len(opts.FrontPaths))
	for _, path := range opts.FrontPaths {
		p.frontPaths[path] = true
	}
	p.waiting = &Lent{waits: p}
	return p, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.Engine == nil || o.Engine.Host == "" {
		errs = append(errs, errors.New("an engine URL with a host is required"))
	}
	if o.Gate == nil {
		errs = append(errs, errors.New("a gate is required"))
	}
	if o.OverloadStatus != 0 && (o.OverloadStatus < 200 || o.OverloadStatus > 999) {
		errs = append(errs, fmt.Errorf("overload status must be from 200 through 999, got %d", o.OverloadStatus))
	}
	if o.LoadReport != nil && (o.LoadReport.Key == "" || o.LoadReport.Value == nil) {
		errs = append(errs, errors.New("a load report needs a header name and a value"))
	}
	if o.RetryAfter < 0 || o.MaxRequestBodyBytes < 0 || o.RequestBodyTimeout < 0 {
		errs = append(errs, errors.New("retry-after, the body limit and the body timeout must not be negative"))
	}
	if o.FirstToken.Timeout < 0 || o.FirstToken.Per1KTokens < 0 {
		errs = append(errs, fmt.Errorf("the first-token timeout and its growth per 1000 tokens must not be negative, got %s and %s",
			o.FirstToken.Timeout, o.FirstToken.Per1KTokens))
	}
	return errors.Join(errs...)
}

func (p *Proxy) setDefaults(opts Options) error {
	if p.maxBody == 0 {
		p.maxBody = DefaultMaxRequestBodyBytes
	}
	if opts.MaxBufferedBodyBytes == 0 {
		p.budget = newBodyBudget(DefaultMaxBufferedBodyBytes)
	}
	if p.access == nil {
		p.access = zap.NewNop()
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.errLog = zap.NewStdLog(p.log.Named("reverseproxy"))
	status := opts.OverloadStatus
	if status == 0 {
		status = 529
	}
	p.answers = newAnswers(status, int(opts.RetryAfter/time.Second), p.maxBody)
	p.firstToken = newFirstTokenGuard(opts.FirstToken, &p.answers)
	if p.client != nil || p.transport != nil {
		return nil
	}
	c, err := engine.New(engine.Options{URL: p.engineURL, Pool: PoolSize(p.gate.Stats())})
	p.client = c
	return err
}

// StartDraining makes the proxy answer new requests with 503 draining,
// each closing its connection (CloseConnections); requests already
// admitted or queued go on. It cannot be undone.
func (p *Proxy) StartDraining() {
	p.CloseConnections()
	p.gate.StartDraining()
}

// CloseConnections makes every answer from now on say "Connection: close"
// and close its connection once written, as a draining server should
// (over HTTP/2, net/http's server sends GOAWAY instead, and closes the
// connection once its calls end): a kept connection outlives the
// endpoint update that takes the pod out of a Service, and a client (a
// gateway's pool, an SDK's) would otherwise keep sending to a pod on its
// way out, then get its 503s until the pod exits. A client that connects
// again is routed anew. Answers go on being served as before; only the
// connection is not kept. The front end leaves every request to net/http
// from then on (AnswerEarly, answerWaiting), whose answers the handler
// closes. It cannot be undone.
func (p *Proxy) CloseConnections() { p.closing.Store(true) }

// Closing reports whether CloseConnections was called.
func (p *Proxy) Closing() bool { return p.closing.Load() }

// Draining reports whether StartDraining was called.
func (p *Proxy) Draining() bool { return p.gate.Draining() }

// Resuming is the number of parked requests that left the limiter
// (granted, or refused: a queue timeout) and are on their way back to
// the HTTP server, whose handler has not taken them yet. A shutdown
// waits for them as for the limiter's: the server does not know them
// until then, and a Shutdown begun meanwhile would close them unanswered.
func (p *Proxy) Resuming() int { return int(p.resuming.Load()) }

// PoolSize is the number of idle keep-alive connections to keep to the
// engine: one for every request that may be in flight or about to be.
func PoolSize(s limiter.Stats) int {
	if s.Unlimited || s.Slots == 0 { // no cap on the requests in flight
		return 1024
	}
	return s.Slots + s.QueueLen
}

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

// bufferPool reuses the 32 KiB copy buffers of httputil.ReverseProxy and
// of the plain path, which takes and gives back the pointer the pool
// holds (take, give): Put's []byte costs an allocation each time.
type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.take() }
func (b *bufferPool) Put(s []byte) { b.give(&s) }

func (b *bufferPool) take() *[]byte  { return b.pool.Get().(*[]byte) }
func (b *bufferPool) give(s *[]byte) { b.pool.Put(s) }
