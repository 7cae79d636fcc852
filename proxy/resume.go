package proxy

import (
	"errors"
	"net"
	"net/http"
	"sync"
)

// Resume serves a client connection again once the relay has carried its
// answer: srv takes it back for its next request, as if just accepted
// (its ConnContext and ConnState hooks run again). A server that is
// shutting down closes it instead. The goroutine it starts ends as soon
// as srv took the connection or refused it.
func Resume(srv *http.Server, c net.Conn) {
	go func() {
		ln := &oneConn{c: c, addr: c.LocalAddr()}
		_ = srv.Serve(ln) // returns once it asks for a second connection
		ln.closeUntaken()
	}()
}

// oneConn is a listener that hands out one connection, then fails: the
// server serves that connection on and returns from Serve.
type oneConn struct {
	mu   sync.Mutex
	c    net.Conn // nil once taken
	addr net.Addr
}

var errOneConnTaken = errors.New("proxy: the resumed connection was taken")

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	l.c = nil
	if c == nil {
		return nil, errOneConnTaken
	}
	return c, nil
}

// Close closes nothing: the connection, once taken, is the server's.
func (l *oneConn) Close() error { return nil }

func (l *oneConn) Addr() net.Addr { return l.addr }

// closeUntaken closes the connection if the server never took it (it
// was shutting down).
func (l *oneConn) closeUntaken() {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}
