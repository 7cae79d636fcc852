package proxy

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the transport to the engine, keeping up to pool idle
// keep-alive connections. Go's default of 2 idle connections per host makes
// a busy proxy open and close connections on every request, and run out of
// ephemeral ports (knative/serving#2086).
func NewTransport(pool int) *http.Transport {
	return &http.Transport{
		// The engine is beside us in the pod: never go through an
		// environment proxy to reach it.
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        pool,
		MaxIdleConnsPerHost: pool,
		IdleConnTimeout:     90 * time.Second,
		// Pass the client's encodings through untouched.
		DisableCompression: true,
		// No response header timeout: prefill of a long prompt can take
		// minutes, and the client's own deadline governs.
		ResponseHeaderTimeout: 0,
		ExpectContinueTimeout: time.Second,
	}
}
