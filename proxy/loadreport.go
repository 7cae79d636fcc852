package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// LoadReport puts the worker's load report on proxied answers: ORCA's
// endpoint-load-metrics, which Envoy and other balancers read from an
// answer's headers and trailers.
type LoadReport struct {
	// Key is the header's name.
	Key string
	// Value returns the latest report for the request whose headers are
	// req (it may answer in the form they ask for), or "" to send none.
	// It runs on the request path, once at the answer's headers and once
	// more at the end of a streamed answer that takes trailers: it must be
	// fast and safe for concurrent use.
	Value func(req http.Header) string
	// RequestHeaders names the request headers Value reads. A request
	// that has none of them may be answered by the proxy port's front
	// end (AnswerEarly), which builds no header map: Value then gets nil.
	RequestHeaders []string
}

// loadReport is a LoadReport with its key as net/http keeps header keys,
// so that an engine's own report, under that key, is replaced rather than
// sent beside slotgate's (Envoy reads the first value only).
type loadReport struct {
	key   string
	value func(req http.Header) string
	reads []string // RequestHeaders, in lower case
}

// newLoadReport returns nil when there is no report to send.
func newLoadReport(o *LoadReport) *loadReport {
	if o == nil {
		return nil
	}
	reads := make([]string, len(o.RequestHeaders))
	for i, h := range o.RequestHeaders {
		reads[i] = strings.ToLower(h) // as earlyField compares names
	}
	return &loadReport{key: http.CanonicalHeaderKey(o.Key), value: o.Value, reads: reads}
}

// reportLoad sets the load report on the answer's headers. A streamed
// answer (its length unknown) whose client takes trailers carries it
// again as a trailer, taken as the answer ends: a report taken at the
// start of a two-minute generation is two minutes old by its end. HTTP/2
// clients always take trailers; an HTTP/1.1 client says so with "TE:
// trailers". Envoy processes one report per answer, the header's when
// there is one, so the trailer serves the clients that read it.
//
// An exchange the front end serves has no request (ex.in nil): Value
// gets nil, which RequestHeaders allows, and its answer has a length.
func (ex *exchange) reportLoad(resp *http.Response) {
	lr := ex.p.loadReport
	var req http.Header
	if ex.in != nil {
		req = ex.in.Header
	}
	v := lr.value(req)
	if v == "" {
		return
	}
	resp.Header[lr.key] = []string{v}
	if resp.ContentLength >= 0 || ex.in == nil || !bodyAllowed(ex.in.Method, resp.StatusCode) || !takesTrailers(ex.in) {
		return
	}
	if resp.Trailer == nil {
		resp.Trailer = make(http.Header, 1)
	}
	// Announced now, so that the trailer is declared before the headers
	// go out (httputil.ReverseProxy names each key of resp.Trailer in a
	// Trailer header), without a value, which the ReverseProxy would add
	// to the client's header map. The body's Close, which the ReverseProxy
	// calls after the last byte, sets that map's value instead: the
	// headers went out with the first report, and what the map holds of a
	// declared trailer at the end is sent as the trailer.
	resp.Trailer[lr.key] = nil
	out := ex.out.Header()
	resp.Body = &trailingBody{ReadCloser: resp.Body, set: func() {
		if ex.out.status == 0 {
			// Closed before the answer's head went out (the first-token
			// watchdog's refusal): the map is the refusal's headers.
			delete(out, lr.key)
			return
		}
		if v := lr.value(req); v != "" {
			out[lr.key] = []string{v}
		} else {
			delete(out, lr.key)
		}
	}}
}

// takesTrailers reports whether the client of r reads trailers: every
// HTTP/2 client does; an HTTP/1.1 one only when its TE header lists
// "trailers" (RFC 9110, section 10.1.4).
func takesTrailers(r *http.Request) bool {
	if r.ProtoMajor >= 2 {
		return true
	}
	if !r.ProtoAtLeast(1, 1) {
		return false
	}
	for _, v := range r.Header["Te"] {
		for part := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(part, ";")
			if asciiEqualFold(strings.TrimSpace(name), "trailers") {
				return true
			}
		}
	}
	return false
}

// bodyAllowed reports whether an answer of status to a request of method
// has a body, and so can have trailers.
func bodyAllowed(method string, status int) bool {
	return method != http.MethodHead && status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// trailingBody is an answer's body that runs set once, at its Close.
type trailingBody struct {
	io.ReadCloser
	once sync.Once
	set  func()
}

func (b *trailingBody) Close() error {
	b.once.Do(b.set)
	return b.ReadCloser.Close()
}
