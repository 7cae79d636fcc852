package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
)

// DefaultMaxRequestBodyBytes bounds request bodies when Options leave it 0.
const DefaultMaxRequestBodyBytes = 32 << 20

// Options configure a Proxy.
type Options struct {
	// Engine is the engine's base URL. Required.
	Engine *url.URL
	// Limiter admits requests. Required; limiter.NewUnlimited gives a pure
	// pass-through.
	Limiter *limiter.Limiter
	// OverloadStatus answers capacity rejections and queue timeouts; 0 means
	// 529.
	OverloadStatus int
	// RetryAfter is sent with overload and draining answers, in whole
	// seconds; 0 sends no Retry-After.
	RetryAfter time.Duration
	// MaxRequestBodyBytes bounds request bodies (413 past it); 0 means
	// DefaultMaxRequestBodyBytes.
	MaxRequestBodyBytes int64
	// PassthroughPaths are forwarded without a slot: the engine's probes.
	PassthroughPaths []string
	// Transport reaches the engine; nil means slotgate's own: plain HTTP/1.1
	// requests with small bodies on the handler's goroutine, the rest
	// through NewTransport sized for the limiter.
	Transport http.RoundTripper
	// Flights counts the prompt and generated tokens of the admitted
	// requests as they pass; nil counts nothing.
	Flights *inflight.Tracker
	// LoadHeaders, when set, adds headers to every proxied response (the
	// ORCA load report); it runs on the request path and must be fast.
	LoadHeaders func(http.Header)
	// Admission, when set, classifies each request before it is queued;
	// nil admits every request as class DefaultClass.
	Admission *Admission
	// Changed, when set, is called after the admission state may have
	// changed: a request entered the queue, or a request ended (its slot
	// or queue place released). It must not block.
	Changed func()
	// Busy, when set, is asked before admission: while it returns true,
	// new requests are refused with the overload status, reason busy.
	Busy func() bool
	// Observer receives measurements; nil discards them.
	Observer Observer
	// AccessLog gets one line per request, never sampled; nil logs nothing.
	AccessLog *zap.Logger
	// Logger gets operational messages; nil logs nothing.
	Logger *zap.Logger
}

// Proxy is an http.Handler that forwards to the engine through the limiter.
type Proxy struct {
	engine      *url.URL
	lim         *limiter.Limiter
	rp          *httputil.ReverseProxy
	passthrough map[string]bool
	answers     answers
	maxBody     int64
	obs         Observer
	access      *zap.Logger
	log         *zap.Logger
	ids         *idSource
	draining    atomic.Bool
	flights     *inflight.Tracker
	loadHeaders func(http.Header)
	busy        func() bool
	changed     func()
	admission   *Admission
	class       string // the class of an unclassified request
	unlimited   bool   // the limiter has no cap, hence no queues
}

// New checks opts and returns a Proxy.
func New(opts Options) (*Proxy, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{
		engine:      opts.Engine,
		lim:         opts.Limiter,
		passthrough: make(map[string]bool, len(opts.PassthroughPaths)),
		maxBody:     opts.MaxRequestBodyBytes,
		obs:         opts.Observer,
		access:      opts.AccessLog,
		log:         opts.Logger,
		ids:         newIDSource(),
		flights:     opts.Flights,
		loadHeaders: opts.LoadHeaders,
		busy:        opts.Busy,
		changed:     opts.Changed,
		admission:   opts.Admission,
		class:       DefaultClass,
		unlimited:   opts.Limiter != nil && opts.Limiter.Stats().Unlimited,
	}
	if opts.Admission != nil {
		p.class = opts.Admission.DefaultClass
	}
	p.setDefaults(opts)
	for _, path := range opts.PassthroughPaths {
		p.passthrough[path] = true
	}
	var transport http.RoundTripper = inMemoryBody{next: opts.Transport}
	if opts.Transport == nil {
		pool := poolSize(p.lim.Stats())
		transport = newDirectTransport(inMemoryBody{next: NewTransport(pool)}, p.engine.Host, pool)
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transport,
		BufferPool:     newBufferPool(),
		ErrorHandler:   p.engineError,
		ModifyResponse: p.modifyResponse,
		ErrorLog:       zap.NewStdLog(p.log.Named("reverseproxy")),
	}
	return p, nil
}

func (o *Options) validate() error {
	var errs []error
	if o.Engine == nil || o.Engine.Host == "" {
		errs = append(errs, errors.New("an engine URL with a host is required"))
	}
	if o.Limiter == nil {
		errs = append(errs, errors.New("a limiter is required"))
	}
	if o.OverloadStatus != 0 && (o.OverloadStatus < 200 || o.OverloadStatus > 999) {
		errs = append(errs, fmt.Errorf("overload status must be from 200 through 999, got %d", o.OverloadStatus))
	}
	if o.Admission != nil {
		if err := o.Admission.validate(); err != nil {
			errs = append(errs, err)
		} else if o.Limiter != nil {
			if err := o.Admission.matches(o.Limiter.Stats()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if o.RetryAfter < 0 || o.MaxRequestBodyBytes < 0 {
		errs = append(errs, errors.New("retry-after and the body limit must not be negative"))
	}
	return errors.Join(errs...)
}

func (p *Proxy) setDefaults(opts Options) {
	if p.maxBody == 0 {
		p.maxBody = DefaultMaxRequestBodyBytes
	}
	if p.changed == nil {
		p.changed = func() {}
	}
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	if p.access == nil {
		p.access = zap.NewNop()
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	status := opts.OverloadStatus
	if status == 0 {
		status = 529
	}
	p.answers = newAnswers(status, int(opts.RetryAfter/time.Second), p.maxBody)
}

// StartDraining makes the proxy answer new requests with 503 draining;
// requests already admitted or queued go on. It cannot be undone.
func (p *Proxy) StartDraining() { p.draining.Store(true) }

// Draining reports whether StartDraining was called.
func (p *Proxy) Draining() bool { return p.draining.Load() }

// poolSize is the number of idle keep-alive connections to keep to the
// engine: one for every request that may be in flight or about to be.
func poolSize(s limiter.Stats) int {
	if s.Unlimited {
		return 1024
	}
	return s.Slots + s.QueueLen
}

func newBufferPool() httputil.BufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

// bufferPool reuses the 32 KiB copy buffers of httputil.ReverseProxy.
type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.pool.Get().(*[]byte) }
func (b *bufferPool) Put(s []byte) { b.pool.Put(&s) }
