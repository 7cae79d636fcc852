package fastplane

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"
)

// refusedHeader marks the stand-in head that the proxy port's strict
// listener (command/strict.go) gives the server for a head it refused:
// "STATUS REASON MESSAGE". The net/http plane names it
// proxy.RefusedHeader; this plane may not import proxy.
const refusedHeader = "Slotgate-Refused-Head"

// hopHeaders are the hop-by-hop headers never sent to the engine (RFC
// 9110 7.6.1), and the h2c upgrade's, which the plane ignores as the
// net/http plane does.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
	"TE", "Trailer", "Upgrade", "Http2-Settings"}

// strict answers, and returns true for, what the net/http plane's
// proxy.Strict answers itself: a head the strict listener refused (400,
// or 431 for a head too large) and CONNECT (405). The connection is
// closed after either.
func (s *Server) strict(rc *fasthttp.RequestCtx) bool {
	if v := rc.Request.Header.Peek(refusedHeader); len(v) > 0 {
		_, rest, _ := bytes.Cut(v, []byte(" "))
		reason, message, _ := bytes.Cut(rest, []byte(" "))
		a := newAnswer(http.StatusBadRequest, "invalid_request_error", string(message), "bad_request", "")
		if string(reason) == "header_too_large" {
			a = newAnswer(http.StatusRequestHeaderFieldsTooLarge, "invalid_request_error", string(message), "header_too_large", "")
		}
		s.write(rc, &a, "")
		rc.SetConnectionClose()
		return true
	}
	if rc.IsConnect() {
		s.write(rc, &s.answers.connect, "")
		rc.Response.Header.Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		rc.SetConnectionClose()
		return true
	}
	return false
}
