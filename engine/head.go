package engine

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/internal/httpsyntax"
)

// appendHead appends the head of req, whose body is n bytes in memory (0:
// none), byte for byte as net/http's Request.Write writes it, and reports
// true; or appends nothing and reports false when req is one it does not
// write (an unusual host, a control byte in the URL, a header name it
// would drop or a value it would clean up, trailers, an explicit transfer
// coding, Close),
// which Request.Write then writes. Request.Write costs the fast path about
// 5% of its CPU: a transfer writer, a sorted copy of the header map and
// formatted writes, for each request.
func appendHead(b []byte, req *http.Request, n int64) ([]byte, bool) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	uri := req.URL.RequestURI()
	if !plainHost(host) || hasCTL(uri) || req.Trailer != nil || len(req.TransferEncoding) > 0 ||
		req.Close || req.Method == http.MethodConnect {
		return b, false
	}
	var stack [24]string
	keys := stack[:0]
	for k, vv := range req.Header {
		if writtenApart(k) {
			continue
		}
		if !httpsyntax.Token(k) {
			return b, false
		}
		for _, v := range vv {
			if !cleanValue(v) {
				return b, false
			}
		}
		keys = append(keys, k)
	}
	ua := "Go-http-client/1.1"
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = vv[0]
		}
	}
	if !cleanValue(ua) {
		return b, false
	}
	slices.Sort(keys)
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	b = append(append(append(append(b, method...), ' '), uri...), " HTTP/1.1\r\nHost: "...)
	b = append(append(b, host...), "\r\n"...)
	if ua != "" {
		b = append(append(append(b, "User-Agent: "...), ua...), "\r\n"...)
	}
	if n > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b = append(strconv.AppendInt(append(b, "Content-Length: "...), n, 10), "\r\n"...)
	}
	for _, k := range keys {
		for _, v := range req.Header[k] {
			b = append(append(append(append(b, k...), ": "...), v...), "\r\n"...)
		}
	}
	return append(b, "\r\n"...), true
}

// writtenApart reports whether header k is one Request.Write writes from
// the request's fields, or never, rather than from the header map.
func writtenApart(k string) bool {
	switch k {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// plainHost reports whether host is an ASCII host[:port] that
// Request.Write sends as it is: no zone, nothing to encode.
func plainHost(host string) bool {
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// cleanValue reports whether Request.Write writes v as it is: no line
// break to replace, no space or tab to trim.
func cleanValue(v string) bool {
	if v != textproto.TrimString(v) {
		return false
	}
	return !strings.ContainsAny(v, "\r\n")
}

// hasCTL reports whether s holds an ASCII control byte.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}
