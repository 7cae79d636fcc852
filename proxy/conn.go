package proxy

import (
	"context"
	"net"
	"net/http"

	"github.com/slotgate/slotgate/engine"
)

type connKey struct{}

// ConnContext is the http.Server ConnContext hook that lets the proxy
// look at a request's client connection when a queued request is granted
// a slot (see clientLeft). Servers of a Proxy should set it; without it,
// a departed client is seen only once net/http has read its close. The
// connection is net/http's per-connection context, not per-request data.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connUnder returns c, or the first connection under c's wrappers
// (those with a NetConn method, as tls.Conn and the proxy's own have),
// that is a T.
func connUnder[T any](c net.Conn) (T, bool) {
	for c != nil {
		if x, ok := c.(T); ok {
			return x, true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	var none T
	return none, false
}

// connOf returns r's client connection, as the server accepted it; nil
// without the ConnContext hook.
func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}

// clientLeft reports whether r's client is known to be gone: its context
// ended, or its connection was closed by the peer though net/http has not
// read that yet.
//
// The second matters when many clients leave at once, as when a client
// process dies: the requests in flight are aborted first and free their
// slots, which go to queued requests whose clients' closes have already
// arrived but wait, unread, behind the scheduler. Forwarding those would
// make the engine start work nobody will read. Looking at the socket
// costs one non-blocking system call, paid only by requests that waited.
func clientLeft(r *http.Request) bool {
	if r.Context().Err() != nil {
		return true
	}
	c := connOf(r)
	return c != nil && engine.PeerClosed(c)
}
