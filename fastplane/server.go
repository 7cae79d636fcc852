package fastplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/slotgate/slotgate/gate"
)

// Options configure a Server.
type Options struct {
	// Engine is the engine's base URL, http://host:port. Required.
	Engine *url.URL
	// Gate admits every request but the passthrough paths'. Required.
	Gate *gate.Gate
	// OverloadStatus answers capacity refusals; 0 means 529.
	OverloadStatus int
	// RetryAfter is sent with overload and draining answers, whole
	// seconds; 0 sends none.
	RetryAfter time.Duration
	// MaxRequestBodyBytes bounds a request's body; 0 means 32 MiB.
	MaxRequestBodyBytes int64
	// HeaderTimeout bounds the time a request (head and body, which
	// fasthttp reads together) may take to arrive; 0 is no limit.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the time a request's body may take to arrive,
	// from its head; 0 leaves it to HeaderTimeout's deadline.
	BodyTimeout time.Duration
	// PassthroughPaths go to the engine without a slot.
	PassthroughPaths []string
	// Logger gets engine failures; nil logs nothing.
	Logger *slog.Logger
}

// Server serves the proxy port over fasthttp.
type Server struct {
	gate        *gate.Gate
	engine      *fasthttp.HostClient
	engineHost  string
	passthrough map[string]bool
	answers     answers
	ids         *gate.IDs
	log         *slog.Logger
	srv         *fasthttp.Server
}

const (
	defaultMaxBody = 32 << 20
	maxHead        = 8 << 10 // the largest request head, request line included
)

// New checks opts and returns a Server, not yet serving.
func New(opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("fastplane: %w", err)
	}
	maxBody := opts.MaxRequestBodyBytes
	if maxBody == 0 {
		maxBody = defaultMaxBody
	}
	s := &Server{
		gate: opts.Gate, engineHost: opts.Engine.Host, passthrough: map[string]bool{},
		answers: newAnswers(opts.OverloadStatus, int(opts.RetryAfter/time.Second), maxBody),
		ids:     gate.NewIDs(), log: opts.Logger,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range opts.PassthroughPaths {
		s.passthrough[p] = true
	}
	s.engine = &fasthttp.HostClient{
		Addr: opts.Engine.Host,
		// The gate bounds what is in flight; the pool must never refuse
		// a request the gate admitted.
		MaxConns:                 math.MaxInt32,
		StreamResponseBody:       true,
		DisablePathNormalizing:   true,
		NoDefaultUserAgentHeader: true,
		MaxIdleConnDuration:      90 * time.Second,
		// Never send a request twice: an engine that failed it once
		// (a bad answer head) fails it again, and a retried generation
		// would run twice.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr:                retryStale,
	}
	s.srv = &fasthttp.Server{
		Handler:            s.handle,
		ErrorHandler:       s.badInput,
		MaxRequestBodySize: int(min(maxBody, math.MaxInt32)),
		ReadTimeout:        opts.HeaderTimeout,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: opts.BodyTimeout}
		},
		IdleTimeout:           5 * time.Minute,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// The engine's answer is relayed as it is: never compressed,
		// never given a Date it did not send.
		NoDefaultDate:                 true,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: false,
		// fasthttp reads a request's head within its read buffer: this
		// is the largest head it takes (net/http's plane takes 1 MiB).
		ReadBufferSize: maxHead,
	}
	return s, nil
}

func (o *Options) validate() error {
	switch {
	case o.Engine == nil || o.Engine.Scheme != "http" || o.Engine.Host == "":
		return errors.New("the engine must be an http://host:port URL")
	case o.Gate == nil:
		return errors.New("a gate is required")
	case o.OverloadStatus != 0 && (o.OverloadStatus < 200 || o.OverloadStatus > 999):
		return fmt.Errorf("overload status must be from 200 through 999, got %d", o.OverloadStatus)
	case o.RetryAfter < 0 || o.MaxRequestBodyBytes < 0 || o.HeaderTimeout < 0 || o.BodyTimeout < 0:
		return errors.New("retry-after, the body limit and the timeouts must not be negative")
	}
	return nil
}

// Serve serves ln until Shutdown or Close; it returns nil once the server
// was stopped.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("fastplane: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and waits, until ctx ends, for the
// open ones to finish their requests.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.ShutdownWithContext(ctx); err != nil {
		return fmt.Errorf("fastplane: %w", err)
	}
	return nil
}

// Close stops the server without waiting for the requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.srv.ShutdownWithContext(ctx) // an ended context: stop, do not wait
	s.engine.CloseIdleConnections()
	return nil
}

// retryStale retries, once, a request whose engine connection closed
// before any byte of the answer, which fasthttp reports only when the
// connection was a reused one (the engine closed it while idle), as
// net/http's transport does. Every other failure is answered.
func retryStale(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	return false, attempts < 2 && errors.Is(err, fasthttp.ErrConnectionClosed)
}
