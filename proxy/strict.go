package proxy

import (
	"net/http"
	"strings"
)

// Strict wraps the proxy port's handler with the checks that need the
// request as net/http parsed it. The checks on the raw bytes of an
// HTTP/1.x request head (framing, line endings) cannot be made here, since
// net/http normalises what they look at away before a handler runs; the
// proxy port's listener makes those (command/strict.go), and gives
// net/http a stand-in head for each head it refuses, which Strict answers.
//
//   - A stand-in head (RefusedHeader) is answered 400, or 431 for a head
//     too large, in OpenAI's error shape, and the connection closed.
//
//   - CONNECT is refused with 405, on HTTP/1.1 and HTTP/2 alike, and the
//     HTTP/1.1 connection is closed: slotgate is not a forward proxy, and
//     the bytes a client sends after a CONNECT (a TLS handshake, say) are
//     not a request. Without this, httputil.ReverseProxy would forward the
//     CONNECT to the engine.
//
//   - An HTTP/1.1 "Upgrade: h2c" is ignored, and the request served over
//     HTTP/1.1 (RFC 9113 §3.1 deprecates it; Go's server does not implement
//     it): its Upgrade and HTTP2-Settings headers are removed, so that
//     httputil.ReverseProxy does not offer the engine the upgrade, which
//     would tunnel a multiplexed HTTP/2 connection through one slot. Other
//     upgrades (WebSocket) go to the engine as before.
//
// Methods other than CONNECT go to the engine, which answers the ones it
// does not know.
func Strict(next http.Handler) http.Handler {
	connect := newAnswer(http.StatusMethodNotAllowed, "invalid_request_error",
		"Method CONNECT is not allowed: slotgate is not a forward proxy", "method_not_allowed", "")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get(RefusedHeader); v != "" && r.ProtoMajor == 1 {
			refuseHead(w, v)
			return
		}
		if r.Method == http.MethodConnect {
			h := w.Header()
			h["Content-Type"] = contentTypeJSON
			h["Content-Length"] = connect.lengthV
			h[ReasonHeader] = connect.reasonV
			h["Allow"] = []string{"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"}
			if r.ProtoMajor == 1 {
				h["Connection"] = connectionClose
			}
			w.WriteHeader(connect.status)
			_, _ = w.Write(connect.body)
			return
		}
		if r.ProtoMajor == 1 && upgradesToH2C(r.Header) {
			r.Header.Del("Upgrade")
			r.Header.Del("Http2-Settings")
		}
		next.ServeHTTP(w, r)
	})
}

// upgradesToH2C reports whether the Upgrade header offers only h2c.
func upgradesToH2C(h http.Header) bool {
	vs := h.Values("Upgrade")
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		for p := range strings.SplitSeq(v, ",") {
			if !asciiEqualFold(strings.TrimSpace(p), "h2c") {
				return false
			}
		}
	}
	return true
}

// RefusedHeader marks the stand-in head that the proxy port's listener
// gives net/http for a head it refused (command/strict.go): its value is
// "STATUS REASON MESSAGE", which Strict answers in OpenAI's error shape,
// closing the connection. A client that sends it itself only has its own
// request refused: the status is 431 for header_too_large, else 400.
const RefusedHeader = "Slotgate-Refused-Head"

// refuseHead answers a refused head, from the value of RefusedHeader.
func refuseHead(w http.ResponseWriter, v string) {
	_, rest, _ := strings.Cut(v, " ")
	reason, message, _ := strings.Cut(rest, " ")
	status := http.StatusBadRequest
	if reason == "header_too_large" {
		status = http.StatusRequestHeaderFieldsTooLarge
	} else {
		reason = "bad_request"
	}
	a := newAnswer(status, "invalid_request_error", message, reason, "")
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = a.lengthV
	h[ReasonHeader] = a.reasonV
	h["Connection"] = connectionClose
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
