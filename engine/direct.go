package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// direct is the hand-written path: it sends the common engine request on
// the caller's own goroutine, writing the request in one write and reading
// the answer from a keep-alive connection of its pool. net/http's
// Transport hands every request to two goroutines of the connection, one
// writing and one reading, and back: four goroutine switches and their
// channel operations per request, about a sixth of the proxy's CPU on the
// fast path (BENCHMARKS.md).
type direct struct {
	host string // the engine's URL host; requests elsewhere are not taken
	// plainHTTP: the engine's URL is http, which SendRaw needs.
	plainHTTP bool
	addr      string // host with its port, 80 when the URL has none
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	maxHead   int64 // bytes of answer head read before giving up
	pool      pool
	answers   answerPool // what answers allocate, given back (Recycle)
}

func newDirect(opts Options, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *direct {
	return &direct{
		host:      opts.URL.Host,
		plainHTTP: opts.URL.Scheme == "http",
		addr:      withPort(opts.URL.Host, "80"),
		dial:      dial,
		maxHead:   opts.MaxResponseHeaderBytes,
		pool:      pool{max: opts.Pool},
	}
}

// takes reports whether req goes the hand-written way: plain HTTP to the
// engine, nothing to negotiate, and a body in memory, none, or one that
// streams with a declared length.
func (d *direct) takes(req *http.Request, body []byte) bool {
	if req.URL.Scheme != "http" || req.URL.Host != d.host ||
		req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return false
	}
	return body != nil || !streams(req) || req.ContentLength > 0
}

// streams reports whether req's body is read as it is sent: it can be
// sent once only.
func streams(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

func (d *direct) roundTrip(req *http.Request, body []byte) (*http.Response, error) {
	out := *req // the caller's request is not changed
	if body == nil && streams(req) {
		return d.roundTripStreamed(&out)
	}
	return d.retrying(guard{ctx: req.Context()}, replayable(req), func(ec *conn) (*http.Response, error) {
		out.Body = bodyReader(body)
		return ec.send(&out, nil, d.maxHead)
	})
}

// roundTripStreamed sends out, whose body streams: never again once a
// byte of it was read, whatever the request (a retry that finds the body
// begun fails with the error that ended the first try), and closed
// whatever happens, as a RoundTripper closes it.
func (d *direct) roundTripStreamed(out *http.Request) (*http.Response, error) {
	body := &onceBody{ReadCloser: out.Body}
	out.Body = body
	var last error
	resp, err := d.retrying(guard{ctx: out.Context()}, false, func(ec *conn) (*http.Response, error) {
		if body.read {
			return nil, fmt.Errorf("%w (its body was partly sent, and is not sent again)", last)
		}
		resp, err := ec.send(out, nil, d.maxHead)
		last = err
		return resp, err
	})
	_ = body.Close()
	return resp, err
}

// onceBody is a streamed request body that remembers whether it was read,
// and is closed once.
type onceBody struct {
	io.ReadCloser
	read, closed bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	b.read = true
	return b.ReadCloser.Read(p)
}

func (b *onceBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.ReadCloser.Close()
}

// guard is what cuts an exchange short: its request's context, or the
// caller's Cut (SendRaw).
type guard struct {
	ctx context.Context // nil with cut
	cut *Cut
}

func (g guard) err() error {
	if g.cut != nil {
		return g.cut.err()
	}
	return g.ctx.Err()
}

// dialContext is the context a new connection is dialed under.
func (g guard) dialContext() context.Context {
	if g.cut != nil {
		return context.Background() // bounded by the dial timeout
	}
	return g.ctx
}

// retrying sends a request with send on a pooled or new connection, and
// once more on a new one when a reused connection turns out to have been
// closed by the engine (staleConn). A pooled connection that the look
// before the write finds closed (errEngineClosed) is passed over, as many
// as the pool holds, without counting as a try.
func (d *direct) retrying(g guard, replayable bool, send func(*conn) (*http.Response, error)) (*http.Response, error) {
	for tries := 0; ; {
		ec, reused, err := d.get(g.dialContext(), !replayable)
		if err != nil {
			return nil, err
		}
		resp, err := d.exchange(g, ec, send)
		if err == nil {
			return resp, nil
		}
		_ = ec.c.Close()
		if err := g.err(); err != nil {
			return nil, err
		}
		if errors.Is(err, errEngineClosed) {
			continue // the engine's keep-alive timeout passed
		}
		if tries++; !reused || tries > 1 || !staleConn(err, ec, replayable) {
			return nil, err
		}
		// The engine closed the idle connection as the request went out,
		// before answering anything: send it once more on a new one.
	}
}

// errEngineClosed says that a pooled connection was found closed by the
// engine before its request was written: another is taken.
var errEngineClosed = errors.New("engine: the pooled connection was closed by the engine")

// replayable reports whether req may be sent again after the engine may
// have read it, by net/http's Transport's rule: its method is idempotent,
// or it carries an idempotency key. A generation (POST) is not: an engine
// that read it and then broke the connection may have begun it, and a
// second copy would run beside the first, past slotgate's cap.
func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// staleConn reports whether err on a reused connection means the engine
// had closed it while idle: the write failed; or, for a replayable
// request, the read ended before a single byte of answer. A request that
// is not replayable is sent only on a connection just checked open (get).
func staleConn(err error, ec *conn, replayable bool) bool {
	if !ec.wrote {
		return true
	}
	if !replayable || ec.read.n > 0 {
		return false
	}
	// http.ReadResponse reports an end before the status line as
	// io.ErrUnexpectedEOF.
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// exchange sends a request on ec with send and reads the head of its
// final answer. Until the answer's body is closed, g cuts the
// connection's reads and writes short.
func (d *direct) exchange(g guard, ec *conn, send func(*conn) (*http.Response, error)) (*http.Response, error) {
	parts := d.answers.take()
	body := &parts.body
	*body = answerBody{pool: &d.pool, ec: ec, cut: g.cut, parts: parts}
	if g.cut != nil {
		g.cut.watch(ec.c)
	} else {
		body.stop = context.AfterFunc(g.ctx, func() { _ = ec.c.SetDeadline(time.Unix(1, 0)) })
	}
	ec.parts = parts
	resp, err := send(ec)
	ec.parts = nil
	if err != nil {
		body.unwatch()
		d.answers.give(parts) // nothing holds them: no answer came
		return nil, err
	}
	if resp != &parts.resp {
		// ReadResponse's answer (a stream's, say): of the parts only the
		// body is of use, and the rest goes back now rather than live
		// as long as the answer.
		body = body.alone()
		d.answers.give(parts)
	}
	// The hand-written path never asks for an upgrade: a 101 is an engine
	// that switched protocols unasked, and its connection is not HTTP's
	// any more.
	body.keep = !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols
	body.ReadCloser, resp.Body = resp.Body, body
	return resp, nil
}

// get takes an idle connection, or dials a new one. peek has the write
// of a pooled connection look for a close by the engine first
// (errEngineClosed), for a request that cannot be sent again: a look made
// there, in the same call as the write, costs less than one made here.
func (d *direct) get(ctx context.Context, peek bool) (ec *conn, reused bool, err error) {
	if ec = d.pool.take(); ec != nil {
		// Engines close idle connections after seconds (uvicorn, under
		// vLLM and SGLang, after 5 s), so a connection idle for less
		// than peekAfter is taken as open without a look, unless peek
		// asks for one; one the engine closed anyway is caught by the
		// stale-connection retry.
		ec.peek = peek || time.Since(ec.idle) >= peekAfter
		return ec, true, nil
	}
	c, err := d.dial(ctx, "tcp", d.addr)
	if err != nil {
		return nil, false, err
	}
	return newConn(c), false, nil
}

// peekAfter is how long a connection may sit idle before it is checked
// for a close by the engine when taken from the pool.
const peekAfter = time.Second

// withPort returns host:port as given, or host with the default port.
func withPort(host, port string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
