package engine

import (
	"context"
	"net"
	"net/http"
	"time"
)

// NewTransport returns a net/http Transport to the engine as a Client
// configures its own, with the default dial timeout and header limit,
// keeping up to pool idle connections (DefaultPool when pool <= 0). It is
// for tests that need net/http's own behaviour; callers close its idle
// connections themselves.
func NewTransport(pool int) *http.Transport {
	opts := Options{Pool: max(pool, 0)}
	opts.setDefaults()
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: keepAlive}
	return newTransport(opts, dialer.DialContext)
}

func newTransport(opts Options, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		// The engine is beside us in the pod: never go through an
		// environment proxy to reach it.
		Proxy:       nil,
		DialContext: dial,
		// Go's default of 2 idle connections per host makes a busy proxy
		// open and close connections on every request, and run out of
		// ephemeral ports (knative/serving#2086).
		MaxIdleConns:        opts.Pool,
		MaxIdleConnsPerHost: opts.Pool,
		IdleConnTimeout:     90 * time.Second,
		// Pass the client's encodings through untouched.
		DisableCompression: true,
		// No response header timeout: prefill of a long prompt can take
		// minutes, and the client's own deadline governs.
		ResponseHeaderTimeout:  0,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: opts.MaxResponseHeaderBytes,
	}
}
