package proxy

import (
	"bytes"
	"net"
	"net/http"
	"net/textproto"
	"strconv"

	"github.com/slotgate/slotgate/internal/httpsyntax"
)

// appendEngineRequest appends to dst the head of the engine request for
// an early request, from its raw head, by the plain path's rules
// (engineRequest): the request line as the client sent it, the engine's
// Host, the client's fields but the hop-by-hop and forwarding ones, "TE:
// trailers" kept, X-Forwarded-For appended to, X-Forwarded-Host and -Proto
// set, the request id, and the body's length. It reports whether the
// request may be sent again after the engine may have read it (replayable's
// rule), and false when the head has a field the load report reads
// (LoadReport.RequestHeaders), which the front end does not give it.
func (p *Proxy) appendEngineRequest(dst, head []byte, h *earlyHead, id string, remote net.Addr) (out []byte, replay, ok bool) {
	line, rest, _ := cutCRLF(head)
	dst = append(dst, line...)
	dst = append(dst, "\r\nHost: "...)
	dst = append(dst, p.engineURL.Host...)
	dst = append(dst, "\r\n"...)
	replay = string(h.method) == http.MethodGet
	var host, forwardedFor []byte
	te, agent, forwarded := false, false, false
	for {
		line, rest, _ = cutCRLF(rest)
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.Trim(value, " \t")
		switch earlyField(name, p.loadReport) {
		case fieldHost:
			host = value
		case fieldForwardedFor:
			if forwarded {
				forwardedFor = append(forwardedFor, ", "...)
			}
			forwardedFor, forwarded = append(forwardedFor, value...), true
		case fieldTE:
			te = te || headerHasToken([]string{string(value)}, "trailers")
		case fieldIdempotency:
			replay = replay || len(value) > 0
			dst = appendField(dst, name, value)
		case fieldUserAgent:
			// Only the first is sent, and not when empty (Request.Write
			// writes Header.Get's).
			if !agent && len(value) > 0 {
				dst = appendField(dst, name, value)
			}
			agent = true
		case fieldRead:
			return dst, false, false
		case fieldCopied:
			dst = appendField(dst, name, value)
		}
	}
	if te {
		dst = append(dst, "Te: trailers\r\n"...)
	}
	mark := len(dst)
	dst = append(dst, "X-Forwarded-For: "...)
	if forwarded { // even empty ones: the plain path joins them all
		dst = append(append(dst, forwardedFor...), ", "...)
	}
	if dst, ok = appendClientIP(dst, remote); ok {
		dst = append(dst, "\r\n"...)
	} else {
		dst = dst[:mark] // no host to name: none is set, as on the plain path
	}
	dst = appendField(dst, "X-Forwarded-Host", host)
	dst = append(dst, "X-Forwarded-Proto: http\r\n"...)
	dst = appendField(dst, requestIDHeader, id)
	if h.contentLength > 0 || string(h.method) == http.MethodPost {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, h.contentLength, 10)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...), replay, true
}

// earlyFieldKind is what appendEngineRequest does with a field.
type earlyFieldKind int

const (
	fieldCopied       earlyFieldKind = iota // sent as it came
	fieldDropped                            // hop-by-hop, forwarding or the id: not sent, or sent anew
	fieldHost                               // the client's Host: X-Forwarded-Host
	fieldForwardedFor                       // appended to
	fieldTE                                 // "TE: trailers" kept
	fieldIdempotency                        // makes a POST replayable
	fieldUserAgent                          // not sent when empty
	fieldRead                               // the load report reads it: left to net/http
)

// droppedFields are dropped from an early request: the hop-by-hop fields
// (hopHeaders; the early head has no Transfer-Encoding or Upgrade, and a
// Connection of "keep-alive" alone), the forwarding ones, which the proxy
// sets anew, its Content-Length, written anew, and the client's request
// id, replaced by the exchange's.
var droppedFields = [...]string{"connection", "proxy-connection", "keep-alive", "proxy-authenticate",
	"proxy-authorization", "trailer", "forwarded", "x-forwarded-host", "x-forwarded-proto",
	"content-length", "x-request-id"}

func earlyField(name []byte, lr *loadReport) earlyFieldKind {
	switch {
	case httpsyntax.EqualFold(name, "host"):
		return fieldHost
	case httpsyntax.EqualFold(name, "x-forwarded-for"):
		return fieldForwardedFor
	case httpsyntax.EqualFold(name, "te"):
		return fieldTE
	case httpsyntax.EqualFold(name, "idempotency-key"), httpsyntax.EqualFold(name, "x-idempotency-key"):
		return fieldIdempotency
	case httpsyntax.EqualFold(name, "user-agent"):
		return fieldUserAgent
	}
	for _, d := range droppedFields {
		if httpsyntax.EqualFold(name, d) {
			return fieldDropped
		}
	}
	if lr != nil {
		for _, r := range lr.reads {
			if httpsyntax.EqualFold(name, r) {
				return fieldRead
			}
		}
	}
	return fieldCopied
}

// plainTarget reports whether net/http and the plain path would send the
// request target t to the engine as it came: a path of characters that
// net/url keeps as they are (letters, digits and "-._~!$&'()*+,;=:@/"),
// and a query the plain path keeps (queryKept).
func plainTarget(t []byte, reencode bool) bool {
	path, query, hasQuery := bytes.Cut(t, []byte("?"))
	for _, c := range path {
		if !pathByte(c) {
			return false
		}
	}
	return !hasQuery || queryKept(string(query), reencode)
}

func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/"), c) >= 0
}

// plainField reports whether net/http writes the field k: vv of a
// handler's header as it is: a token name, and values of printable ASCII,
// spaces and tabs, that textproto.TrimString leaves as they are.
func plainField(k string, vv []string) bool {
	if !httpsyntax.Token(k) {
		return false
	}
	for _, v := range vv {
		if !httpsyntax.FieldValue(v) || v != textproto.TrimString(v) {
			return false
		}
	}
	return true
}

// appendClientIP appends to b the host part of remote's address, as
// net.SplitHostPort reads it from remote.String() (the plain path's
// X-Forwarded-For); for a TCP address, without allocating.
func appendClientIP(b []byte, remote net.Addr) ([]byte, bool) {
	if ca, ok := remote.(*ClientAddr); ok {
		remote = ca.Addr
	}
	if ta, ok := remote.(*net.TCPAddr); ok {
		if ip := ta.AddrPort().Addr(); ip.IsValid() {
			return ip.Unmap().AppendTo(b), true
		}
	}
	ip, _, err := net.SplitHostPort(remote.String())
	return append(b, ip...), err == nil
}

// ClientAddr is a client's address with its text made once: the access
// log names the client of every request, and an address's String costs
// three allocations each time (BENCHMARKS.md).
type ClientAddr struct {
	net.Addr
	text string
}

// NewClientAddr returns a, its text made now.
func NewClientAddr(a net.Addr) *ClientAddr { return &ClientAddr{Addr: a, text: a.String()} }

func (a *ClientAddr) String() string { return a.text }
