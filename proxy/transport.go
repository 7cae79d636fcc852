package proxy

import (
	"bytes"
	"io"
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

// inMemoryBody is the engine transport as the proxy uses it: a request
// whose body slotgate holds in memory (recorder.body) goes out with that
// body as a *bytes.Reader. httputil.ReverseProxy hides every body behind
// a wrapper of its own, and net/http's transport sends the headers of a
// body it does not know to be in memory in a write of their own, before
// the body: two writes, and two reads at the engine, per request instead
// of one.
type inMemoryBody struct{ next http.RoundTripper }

func (t inMemoryBody) RoundTrip(req *http.Request) (*http.Response, error) {
	fresh, ok := heldBody(req)
	if !ok {
		return t.next.RoundTrip(req)
	}
	out := *req // RoundTrip must not change the request it was given
	out.Body = fresh()
	out.GetBody = func() (io.ReadCloser, error) { return fresh(), nil }
	return t.next.RoundTrip(&out)
}

// heldBody returns, for an engine request whose body slotgate holds in
// memory (recorder.body), a function that gives a new reader of it.
func heldBody(req *http.Request) (fresh func() io.ReadCloser, ok bool) {
	rec, ok := req.Context().Value(recorderKey{}).(*recorder)
	if !ok || rec.body == nil || req.Body == nil || int64(len(rec.body)) != req.ContentLength {
		return nil, false
	}
	body := rec.body
	return func() io.ReadCloser { return io.NopCloser(bytes.NewReader(body)) }, true
}
