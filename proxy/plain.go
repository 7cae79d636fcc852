package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// The plain path forwards the common request without
// httputil.ReverseProxy: an HTTP/1.x request, with its body held in
// memory, none, or one of a declared length that streams, that the engine
// client's hand-written path takes (no Upgrade, no Expect), to an engine
// URL with neither path nor query, and whose query ReverseProxy would not
// clean. ReverseProxy clones the request (its header map, URL and
// context), hangs a client trace on it for interim answers this path never
// forwards, and copies the answer through a second writer: about a quarter
// of the fast path's allocations (BENCHMARKS.md). The plain path builds
// the engine request once, with ReverseProxy's rules (hop-by-hop headers
// dropped, X-Forwarded-* set, an empty User-Agent kept empty), and copies
// the answer the way it does (flushed on every write when streamed,
// trailers announced and sent, a broken copy aborting the client's
// connection). Every other request takes the ReverseProxy.

// hopHeaders are the hop-by-hop headers dropped in both directions, as
// httputil.ReverseProxy drops them (RFC 9110, section 7.6.1, and the
// older RFC 2616 list).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forwardedHeaders are the client's forwarding headers, replaced by the
// proxy's own (X-Forwarded-For is appended to).
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// plain reports whether the exchange takes the plain path.
func (ex *exchange) plain() bool {
	r, u := ex.r, ex.p.engineURL
	if ex.p.transport != nil || ex.p.client == nil || r.ProtoMajor != 1 ||
		u.Path != "" || u.RawPath != "" || u.RawQuery != "" || u.Scheme != "http" ||
		!queryKept(r.URL.RawQuery, ex.p.reencodeQueries) {
		return false
	}
	if r.ContentLength < 0 || ex.body != nil && int64(len(ex.body)) != r.ContentLength {
		return false // chunked: net/http's transport streams it
	}
	return r.Header.Get("Upgrade") == "" && r.Header.Get("Expect") == ""
}

// maxQueryParams is net/url's default bound on a query's parameters;
// ReverseProxy re-encodes (and so cuts) a query with more.
const maxQueryParams = 10000

// queryKept reports whether ReverseProxy would forward the query q as it
// is: it re-encodes one with a ';', a '%' (this check is coarser than
// ReverseProxy's, which keeps a valid escape), more than maxQueryParams
// parameters, or any query at all when GODEBUG sets urlmaxqueryparams
// (reencode).
func queryKept(q string, reencode bool) bool {
	if q == "" {
		return true
	}
	return !reencode && !strings.ContainsAny(q, ";%") && strings.Count(q, "&") < maxQueryParams
}

// forwardPlain is forward's plain path (see plain).
func (ex *exchange) forwardPlain() {
	in := ex.r
	out := ex.engineRequest()
	resp, err := ex.p.client.Do(out, ex.body)
	if err != nil {
		ex.engineError(&ex.out, in, err)
		return
	}
	ex.relayAnswer(resp)
}

// relayAnswer gives the client the engine's answer to the plain path's
// request, or to a request the front end handed on (Handed).
func (ex *exchange) relayAnswer(resp *http.Response) {
	in := ex.r
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Never asked for (see plain): not an answer to relay.
		_ = resp.Body.Close()
		ex.engineError(&ex.out, in, errUnaskedUpgrade)
		return
	}
	dropHopHeaders(resp.Header)
	if err := ex.respond(resp); err != nil {
		_ = resp.Body.Close()
		ex.engineError(&ex.out, in, err)
		return
	}
	ex.writeAnswer(resp)
}

var errUnaskedUpgrade = errors.New("proxy: the engine switched protocols unasked")

// engineRequest is the request the engine gets, by ReverseProxy's rules
// and the exchange's rewrite: the engine's URL with the client's path and
// query, the client's headers but the hop-by-hop and forwarding ones,
// "TE: trailers" kept, X-Forwarded-For appended to, X-Forwarded-Host and
// -Proto set, the request id, and an empty User-Agent where the client
// sent none (so that none is made up).
func (ex *exchange) engineRequest() *http.Request {
	in := ex.r
	h := make(http.Header, len(in.Header)+4)
	for k, vv := range in.Header {
		h[k] = vv
	}
	dropHopHeaders(h)
	if headerHasToken(in.Header["Te"], "trailers") {
		h["Te"] = []string{"trailers"}
	}
	for _, k := range forwardedHeaders {
		delete(h, k)
	}
	if host, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		if prior := in.Header["X-Forwarded-For"]; len(prior) > 0 {
			host = strings.Join(prior, ", ") + ", " + host
		}
		h["X-Forwarded-For"] = []string{host}
	}
	h["X-Forwarded-Host"] = []string{in.Host}
	h["X-Forwarded-Proto"] = []string{"http"}
	if in.TLS != nil {
		h["X-Forwarded-Proto"] = []string{"https"}
	}
	h[requestIDHeader] = []string{ex.ID}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""}
	}
	u := *ex.p.engineURL
	u.Path, u.RawPath, u.RawQuery = in.URL.Path, in.URL.RawPath, in.URL.RawQuery
	u.ForceQuery = in.URL.ForceQuery
	out := &http.Request{
		Method: in.Method, URL: &u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: in.ContentLength, Host: u.Host,
	}
	switch {
	case ex.body != nil:
		out.Body = http.NoBody // stands for ex.body, sent by the client's Do
	case in.ContentLength > 0:
		out.Body = in.Body // streams, as it is read (prepareBody)
	}
	return out.WithContext(in.Context())
}

// dropHopHeaders deletes from h the headers its Connection header names
// and the hop-by-hop ones.
func dropHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// headerHasToken reports whether one of values lists token, lower-case
// ASCII, by the comma-separated list rule, ASCII case aside (as
// ReverseProxy's rule: trailerſ is not trailers).
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if asciiEqualFold(textproto.TrimString(part), token) {
				return true
			}
		}
	}
	return false
}

// writeAnswer writes resp's head and copies its body to the client, as
// httputil.ReverseProxy does: a streamed answer (an event stream, or one
// of unknown length) is flushed on every write; trailers announced in
// resp.Trailer are named in a Trailer header and sent after the body;
// a copy that breaks aborts the client's connection (http.ErrAbortHandler,
// which finish re-panics once the exchange has ended).
func (ex *exchange) writeAnswer(resp *http.Response) {
	w := &ex.out
	dst := w.Header()
	for k, vv := range resp.Header {
		if len(dst[k]) == 0 {
			dst[k] = vv // resp is the exchange's alone: no copy
		} else {
			dst[k] = append(dst[k], vv...)
		}
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		dst.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	if err := ex.copyBody(resp, streamed(resp)); err != nil {
		_ = resp.Body.Close()
		if ex.r.Context().Value(http.ServerContextKey) == nil {
			return // no server to recover the panic: ReverseProxy's rule
		}
		panic(http.ErrAbortHandler)
	}
	_ = resp.Body.Close() // fills resp.Trailer
	if len(resp.Trailer) == 0 {
		return
	}
	// Chunked even when short: net/http would give a short body a length.
	_ = w.FlushError()
	if len(resp.Trailer) == announced {
		for k, vv := range resp.Trailer {
			dst[k] = append(dst[k], vv...)
		}
		return
	}
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			dst.Add(http.TrailerPrefix+k, v)
		}
	}
}

// copyBody copies resp's body to the client. A streamed answer has its
// head flushed at once, before its first bytes, and every write after.
// A read error other than the body's end (or the request's cancellation)
// is logged, as ReverseProxy logs it. Unlike ReverseProxy, which ignores
// a failed flush and finds the broken connection at its next write, a
// failed flush ends the copy: a stream's next write may be many seconds
// of generation away, and the slot is better handed on now.
func (ex *exchange) copyBody(resp *http.Response, flush bool) error {
	if flush {
		if err := ex.out.FlushError(); err != nil {
			return err
		}
	}
	pooled := ex.p.buffers.take()
	defer ex.p.buffers.give(pooled)
	buf := *pooled
	for {
		n, rerr := resp.Body.Read(buf)
		if rerr != nil && rerr != io.EOF && !errors.Is(rerr, context.Canceled) {
			ex.p.errLog.Printf("proxy: read error during body copy: %v", rerr)
		}
		if n > 0 {
			if _, err := ex.out.Write(buf[:n]); err != nil {
				return err
			}
			if flush {
				if err := ex.out.FlushError(); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// isEventStream reports whether the Content-Type ct is
// text/event-stream, parameters aside and ASCII case aside (as
// mime.ParseMediaType, which refuses other letters, tells it; it also
// parses the parameters, and allocates for each answer).
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return asciiEqualFold(textproto.TrimString(mt), "text/event-stream")
}

// asciiEqualFold reports whether s equals the lower-case ASCII lower,
// ASCII case aside. strings.EqualFold alone would also take Unicode folds
// (U+017F for "s", U+212A for "k"); those are longer in UTF-8 than the
// ASCII letters they fold to, so against an ASCII target equal lengths
// leave only ASCII folds (command/strict.go's asciiFold does the same
// for bytes).
func asciiEqualFold(s, lower string) bool {
	return len(s) == len(lower) && strings.EqualFold(s, lower)
}

// streamed reports whether resp is flushed on every write: an event
// stream, or an answer of unknown length.
func streamed(resp *http.Response) bool {
	if resp.ContentLength == -1 {
		return true
	}
	return isEventStream(resp.Header.Get("Content-Type"))
}
