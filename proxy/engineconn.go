package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// directTransport sends the common engine request, HTTP/1.1 over plain
// TCP with its body in memory or none, on the handler's own goroutine: it
// writes the request in one write and reads the response from a
// keep-alive connection of its own pool. net/http's Transport hands every
// request to two goroutines of the connection, one writing and one
// reading, and back: four goroutine switches and their channel operations
// per request, about a sixth of the proxy's CPU on the fast path
// (BENCHMARKS.md). Anything else (TLS, an upgrade, Expect: 100-continue, a
// streamed body) goes to next, unchanged.
type directTransport struct {
	next   http.RoundTripper
	addr   string // the engine's URL host; requests elsewhere go to next
	dial   string // addr with its port, 80 when the URL has none
	dialer net.Dialer
	max    int // idle connections kept

	mu   sync.Mutex
	idle []*engineConn
}

func newDirectTransport(next http.RoundTripper, addr string, pool int) *directTransport {
	return &directTransport{next: next, addr: addr, dial: withPort(addr, "80"), max: pool,
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
}

func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, ok := directBody(req)
	if !ok || req.URL.Host != t.addr {
		return t.next.RoundTrip(req)
	}
	out := *req // RoundTrip must not change the request it was given
	for attempt := 0; ; attempt++ {
		ec, reused, err := t.get(req.Context())
		if err != nil {
			return nil, err
		}
		out.Body = body()
		resp, err := t.exchange(&out, ec)
		if err == nil {
			return resp, nil
		}
		_ = ec.c.Close()
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		if !reused || attempt > 0 || !staleConn(err, ec) {
			return nil, err
		}
		// The engine closed the idle connection as the request went out,
		// before answering anything: send it once more on a new one.
	}
}

// directBody tells whether req takes the direct path, and gives a fresh
// reader of its body for each attempt.
func directBody(req *http.Request) (func() io.ReadCloser, bool) {
	if req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return nil, false
	}
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		return func() io.ReadCloser { return http.NoBody }, true
	}
	return heldBody(req)
}

// staleConn reports whether err on a reused connection means the engine
// had closed it while idle: the write failed, or the read ended before a
// single byte of answer.
func staleConn(err error, ec *engineConn) bool {
	if ec.read.n > 0 {
		return false
	}
	// http.ReadResponse reports an end before the status line as
	// io.ErrUnexpectedEOF.
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// exchange writes req on ec and reads the head of its final response.
// Until the response body is closed, the end of req's context cuts the
// connection's reads and writes short.
func (t *directTransport) exchange(req *http.Request, ec *engineConn) (*http.Response, error) {
	ec.read.n = 0
	stop := context.AfterFunc(req.Context(), func() { _ = ec.c.SetDeadline(time.Unix(1, 0)) })
	resp, err := ec.send(req)
	if err != nil {
		stop()
		return nil, err
	}
	resp.Body = &engineBody{ReadCloser: resp.Body, t: t, ec: ec, stop: stop, keep: !resp.Close}
	return resp, nil
}

// withPort returns host:port as given, or host with the default port.
func withPort(host, port string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// engineConn is one keep-alive connection to the engine.
type engineConn struct {
	c    net.Conn
	idle time.Time      // when it went back to the pool
	read countingReader // under br: what the engine sent for this request
	br   *bufio.Reader
	bw   *bufio.Writer
}

func (ec *engineConn) send(req *http.Request) (*http.Response, error) {
	if err := req.Write(ec.bw); err != nil {
		return nil, err
	}
	if err := ec.bw.Flush(); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(ec.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer (100, 103): the final one follows
		}
		return resp, nil
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// engineBody gives the connection back to the pool once the response has
// been read to its end, and closes it otherwise. ReverseProxy reads and
// closes it on the handler's goroutine.
type engineBody struct {
	io.ReadCloser
	t        *directTransport
	ec       *engineConn
	stop     func() bool
	keep     bool // the engine keeps the connection open
	eof, end bool
}

func (b *engineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *engineBody) Close() error {
	if b.end {
		return nil
	}
	b.end = true
	if !b.eof || !b.keep {
		// Closed before its end (a client that left, a failed write):
		// the connection goes first, so that the body's Close, which
		// would otherwise read the rest of a stream to its end, returns
		// at once, and the engine sees the request abandoned.
		b.stop()
		_ = b.ec.c.Close()
		_ = b.ReadCloser.Close()
		return nil
	}
	err := b.ReadCloser.Close() // at its end: nothing left to read
	// stop fails when the context has ended and the deadline was cut.
	if b.stop() && err == nil {
		b.t.put(b.ec)
		return nil
	}
	_ = b.ec.c.Close()
	return err
}

// get takes an idle connection the engine has not closed, or dials a new
// one.
func (t *directTransport) get(ctx context.Context) (ec *engineConn, reused bool, err error) {
	for ec = t.takeIdle(); ec != nil; ec = t.takeIdle() {
		// Engines close idle connections after seconds (uvicorn, under
		// vLLM and SGLang, after 5 s), so a connection idle for less
		// than peekAfter is taken as open without a system call; one the
		// engine closed anyway is caught by the stale-connection retry.
		if time.Since(ec.idle) < peekAfter || !peerClosed(ec.c) {
			return ec, true, nil
		}
		_ = ec.c.Close() // the engine's keep-alive timeout passed
	}
	c, err := t.dialer.DialContext(ctx, "tcp", t.dial)
	if err != nil {
		return nil, false, err
	}
	ec = &engineConn{c: c, bw: bufio.NewWriterSize(c, 4<<10)}
	ec.read.r = c
	ec.br = bufio.NewReaderSize(&ec.read, 4<<10)
	return ec, false, nil
}

func (t *directTransport) takeIdle() *engineConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.idle)
	if n == 0 {
		return nil
	}
	ec := t.idle[n-1]
	t.idle[n-1] = nil
	t.idle = t.idle[:n-1]
	return ec
}

func (t *directTransport) put(ec *engineConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle) >= t.max {
		_ = ec.c.Close()
		return
	}
	ec.idle = time.Now()
	t.idle = append(t.idle, ec)
}

// peekAfter is how long a connection may sit idle before it is checked
// for a close by the engine when taken from the pool.
const peekAfter = time.Second

// CloseIdleConnections closes the idle connections of both paths.
func (t *directTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, ec := range idle {
		_ = ec.c.Close()
	}
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
