package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultPool                   = 1024
	DefaultDialTimeout            = 5 * time.Second
	DefaultMaxResponseHeaderBytes = 1 << 20
)

// keepAlive is the TCP keep-alive period of engine connections.
const keepAlive = 30 * time.Second

// Options configure a Client.
type Options struct {
	// URL is the engine's base URL, http or https. Required.
	URL *url.URL
	// Pool is how many idle keep-alive connections each path keeps; 0
	// means DefaultPool.
	Pool int
	// DialTimeout bounds a connection's dial; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxResponseHeaderBytes bounds an answer's head; 0 means
	// DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int64
}

func (o Options) validate() error {
	var errs []error
	switch {
	case o.URL == nil:
		errs = append(errs, errors.New("engine: a URL is required"))
	case o.URL.Scheme != "http" && o.URL.Scheme != "https":
		errs = append(errs, fmt.Errorf("engine: URL %q: scheme must be http or https", o.URL))
	case o.URL.Host == "":
		errs = append(errs, fmt.Errorf("engine: URL %q has no host", o.URL))
	}
	if o.Pool < 0 {
		errs = append(errs, fmt.Errorf("engine: pool %d is negative", o.Pool))
	}
	if o.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("engine: dial timeout %s is negative", o.DialTimeout))
	}
	if o.MaxResponseHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("engine: response header limit %d is negative", o.MaxResponseHeaderBytes))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.Pool == 0 {
		o.Pool = DefaultPool
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxResponseHeaderBytes == 0 {
		o.MaxResponseHeaderBytes = DefaultMaxResponseHeaderBytes
	}
}

// Client sends requests to the engine. It is safe for concurrent use.
type Client struct {
	direct *direct
	tr     *http.Transport
}

// New validates opts, applies the defaults and returns a Client. It starts
// nothing and dials nothing; it fails with every problem in opts, joined.
func New(opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: keepAlive}
	return &Client{
		direct: newDirect(opts, dialer.DialContext),
		tr:     newTransport(opts, dialer.DialContext),
	}, nil
}

// Do sends req to the engine and returns its final answer (interim 1xx
// answers are passed over), whose body the caller must close. body, when
// not nil, is req's whole body held in memory (len(body) ==
// req.ContentLength): it goes out in the same write as the headers, is
// sent again on a retry, and req.Body is only closed. With body nil,
// req.Body streams as given.
//
// A plain http request to the engine's host, with an in-memory body or
// none and neither Upgrade nor Expect, takes the hand-written path on the
// caller's goroutine; every other request goes through net/http's
// Transport.
//
// Do fails when body's length is not req.ContentLength, with the
// request's context error once that has ended, and otherwise with the
// error of the dial, the write or the read of the answer's head. Like a
// RoundTripper, it does not change req, and a non-2xx answer is no error.
func (c *Client) Do(req *http.Request, body []byte) (*http.Response, error) {
	if body != nil {
		if req.Body != nil {
			_ = req.Body.Close() // never read: body stands for it
		}
		if int64(len(body)) != req.ContentLength {
			return nil, fmt.Errorf("engine: in-memory body of %d bytes for a request of length %d",
				len(body), req.ContentLength)
		}
	}
	if c.direct.takes(req, body) {
		return c.direct.roundTrip(req, body)
	}
	if body != nil {
		req = WithBody(req, body)
	}
	return c.tr.RoundTrip(req)
}

// SendRaw sends raw, a whole HTTP/1.1 request the caller wrote for the
// engine (its request line, a Host and a Content-Length, its body), on
// the hand-written path, and returns the engine's final answer as Do
// does. It is for the proxy's front end, which forwards a request it read
// raw without building an *http.Request (proxy.Proxy.AnswerEarly). The
// client must be for an http engine URL (Raw). replayable says whether the
// request may be sent again after the engine may have read it (see
// replayable): a generation may not. cut, the caller's, cuts the exchange
// short, until the answer's body is closed.
func (c *Client) SendRaw(cut *Cut, raw []byte, replayable bool) (*http.Response, error) {
	d := c.direct
	return d.retrying(guard{cut: cut}, replayable, func(ec *conn) (*http.Response, error) {
		return ec.send(nil, raw, d.maxHead)
	})
}

// Raw reports whether SendRaw may be used: the engine is plain HTTP.
func (c *Client) Raw() bool { return c.direct.plainHTTP }

// WithBody returns a shallow copy of req that sends body, which net/http's
// Transport recognises as in memory: it then writes it with the headers,
// and can send it again on a stale connection (GetBody). An empty body is
// http.NoBody. It does not change req, nor its declared length.
func WithBody(req *http.Request, body []byte) *http.Request {
	out := *req
	out.Body = bodyReader(body)
	out.GetBody = func() (io.ReadCloser, error) { return bodyReader(body), nil }
	return &out
}

// bodyReader returns a fresh reader of an in-memory body.
func bodyReader(body []byte) io.ReadCloser {
	if len(body) == 0 {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(body))
}

// HTTPClient returns a new *http.Client for small requests to the engine
// (a health probe, a metrics scrape) over c's net/http Transport: no
// environment proxy, c's dial timeout and header limit, and its idle
// connections closed by c.Close. It never follows a redirect: a redirect
// is not the engine's answer, so it is returned as it came.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{Transport: c.tr, CheckRedirect: noRedirect}
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close closes the idle connections of both paths. The client stays
// usable; a connection busy at the time goes back to its pool when its
// answer is done, so a caller that shuts down calls Close after its last
// answer was closed.
func (c *Client) Close() {
	c.direct.pool.closeIdle()
	c.tr.CloseIdleConnections()
}
