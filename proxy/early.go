package proxy

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/httpsyntax"
)

// refuseHead answers a request that the gate refuses at once, from its
// raw head h, before net/http reads it: AnswerEarly's refusal. Under an
// overload storm most requests are such refusals, and net/http's work
// for each (a request, its header map, a response writer, a background
// read, deadlines) costs more than the refusal itself.
//
// It answers only a request whose answer it knows to be exactly what
// net/http and ServeHTTP would give, byte for byte but the Date: an
// HTTP/1.1 request that earlyHead takes (parseEarlyHead's shape, a body
// of at most 64 KiB and no larger than --max-request-body-bytes, a path
// neither passed through nor served in front of the proxy), that the gate
// refuses at once (RefuseAtOnce). The refusal is counted, reported and
// logged as ServeHTTP's would be. It appends the answer to dst and
// returns true; otherwise it returns dst and false, having changed
// nothing, and the request goes on.
func (p *Proxy) refuseHead(h *earlyHead, remote net.Addr, dst []byte) ([]byte, bool) {
	var ex gate.Exchange
	ex.Start, ex.Protocol = time.Now(), gate.ProtocolHTTP
	if !p.gate.RefuseAtOnce(&ex) {
		return dst, false
	}
	ex.ID = p.ids.For(string(h.requestID))
	return p.refusedEarly(&ex, h, remote, dst), true
}

// earlyHead reads head for an early answer: a head parseEarlyHead takes,
// of a small body, on a path neither passed through nor served in front
// of the proxy.
func (p *Proxy) earlyHead(head []byte) (earlyHead, bool) {
	h, ok := parseEarlyHead(head)
	if !ok || h.contentLength > min(smallBody, p.maxBody) || p.passthrough[string(h.path)] || p.frontPaths[string(h.path)] {
		return h, false
	}
	return h, true
}

// refusedEarly appends to dst the answer to an early request the gate
// refused (ex has its outcome and id), ends the exchange and logs it.
func (p *Proxy) refusedEarly(ex *gate.Exchange, h *earlyHead, remote net.Addr, dst []byte) []byte {
	a := p.answers.of(ex.Outcome, "")
	ex.FirstByte = time.Now()
	dst = a.appendHTTP11(dst, ex.ID, a.retryAfterValue(p), p.dates.at(ex.FirstByte))
	p.gate.Finish(ex, false)
	if p.access.Core().Enabled(zap.InfoLevel) {
		line := h.line(remote)
		p.writeAccess(ex, &line, a.status, h.contentLength, int64(len(a.body)), time.Now())
	}
	return dst
}

// line is what the access log names of an early request.
func (h *earlyHead) line(remote net.Addr) requestLine {
	method := http.MethodGet
	if string(h.method) == http.MethodPost {
		method = http.MethodPost
	}
	return requestLine{method: method, path: string(h.path), proto: "HTTP/1.1", client: remote.String()}
}

// appendHTTP11 appends a as net/http sends answer.write's answer to an
// HTTP/1.1 request whose body has arrived: the status line, the
// handler's headers sorted by name, net/http's Date, and the body.
func (a *answer) appendHTTP11(dst []byte, id string, retryAfter []string, date []byte) []byte {
	dst = append(dst, a.statusLine...)
	dst = appendField(dst, "Content-Length", a.lengthV[0])
	dst = appendField(dst, "Content-Type", contentTypeJSON[0])
	if retryAfter != nil {
		dst = appendField(dst, "Retry-After", retryAfter[0])
	}
	dst = appendField(dst, requestIDHeader, id)
	dst = appendField(dst, ReasonHeader, a.reason)
	dst = append(dst, "Date: "...)
	dst = append(dst, date...)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, a.body...)
}

// appendField appends the field line "name: value".
func appendField[N, V ~string | ~[]byte](dst []byte, name N, value V) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// dates renders the Date of early answers once a second, as HTTP's
// IMF-fixdate.
type dates struct{ last atomic.Pointer[date] }

type date struct {
	unix int64
	text []byte // never written to once published
}

// at is the Date of t.
func (d *dates) at(t time.Time) []byte {
	unix := t.Unix()
	if last := d.last.Load(); last != nil && last.unix == unix {
		return last.text
	}
	next := &date{unix: unix, text: t.UTC().AppendFormat(make([]byte, 0, len(http.TimeFormat)), http.TimeFormat)}
	d.last.Store(next)
	return next.text
}

// httpStatusLine is net/http's HTTP/1.1 status line for status.
func httpStatusLine(status int) string {
	code := strconv.Itoa(status)
	if text := http.StatusText(status); text != "" {
		return "HTTP/1.1 " + code + " " + text + "\r\n"
	}
	return "HTTP/1.1 " + code + " status code " + code + "\r\n"
}

// earlyHead is what an early refusal reads of a request head.
type earlyHead struct {
	method, path  []byte
	target        []byte // the request target: path and query
	requestID     []byte // the first X-Request-Id, trimmed; empty if none
	contentLength int64
	te            bool // a TE field came (it may ask for trailers)
}

// parseEarlyHead reads a whole request head, request line to the empty
// line, CRLFs included, and reports whether an early refusal may answer
// it: an HTTP/1.1 POST or GET that net/http parses, as plainly as
// possible, into the request ServeHTTP would refuse the same way. So it
// takes a narrow shape and leaves everything else to net/http: an
// origin-form target of printable ASCII without percent-encoding or a
// fragment; header lines of a token, a colon and printable ASCII; exactly
// one Host, of host-name characters; at most one Content-Length; a
// Connection header only of "keep-alive"; and none of the headers that
// change how net/http or the proxy handles a request (Expect,
// Transfer-Encoding, Upgrade, HTTP2-Settings, the rank header, the
// listener's stand-in mark, a gRPC content type).
func parseEarlyHead(head []byte) (earlyHead, bool) {
	var h earlyHead
	line, rest, ok := cutCRLF(head)
	if !ok || !h.requestLine(line) {
		return h, false
	}
	hosts, lengths, seenID := 0, 0, false
	for {
		line, rest, ok = cutCRLF(rest)
		if !ok {
			return h, false
		}
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || !httpsyntax.Token(name) || !httpsyntax.FieldValue(value) {
			return h, false
		}
		value = bytes.Trim(value, " \t")
		switch {
		case httpsyntax.EqualFold(name, "host"):
			hosts++
			if !hostBytes(value) {
				return h, false
			}
		case httpsyntax.EqualFold(name, "content-length"):
			lengths++
			n, ok := httpsyntax.Decimal(value)
			if !ok {
				return h, false
			}
			h.contentLength = n
		case httpsyntax.EqualFold(name, "x-request-id"):
			if !seenID {
				h.requestID, seenID = value, true
			}
		case httpsyntax.EqualFold(name, "connection"):
			// Keep-alive is HTTP/1.1's default: said or not, the same
			// request. Any other option (close, a header's name) is
			// left to net/http.
			if !httpsyntax.ListOf(value, "keep-alive") {
				return h, false
			}
		case httpsyntax.EqualFold(name, "te"):
			h.te = true
		case httpsyntax.EqualFold(name, "content-type"):
			if len(value) >= 16 && httpsyntax.EqualFold(value[:16], "application/grpc") {
				return h, false
			}
		case excludedHeader(name):
			return h, false
		}
	}
	return h, len(rest) == 0 && hosts == 1 && lengths <= 1
}

// requestLine reads "METHOD TARGET HTTP/1.1".
func (h *earlyHead) requestLine(line []byte) bool {
	method, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || string(method) != http.MethodPost && string(method) != http.MethodGet {
		return false
	}
	target, proto, ok := bytes.Cut(rest, []byte(" "))
	if !ok || string(proto) != "HTTP/1.1" || len(target) == 0 || target[0] != '/' ||
		len(target) > 1 && target[1] == '/' {
		return false
	}
	for _, c := range target {
		if c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			return false
		}
	}
	h.method, h.path, h.target = method, target, target
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		h.path = target[:i]
	}
	return true
}

// excludedHeader reports whether a header of this name makes net/http or
// the proxy handle its request otherwise than a plain refusal.
func excludedHeader(name []byte) bool {
	for _, x := range [...]string{"expect", "transfer-encoding", "upgrade", "http2-settings",
		"x-data-parallel-rank", "slotgate-refused-head"} {
		if httpsyntax.EqualFold(name, x) {
			return true
		}
	}
	return false
}

// cutCRLF cuts b after its first CRLF: the line before it, and the rest.
func cutCRLF(b []byte) (line, rest []byte, ok bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return nil, b, false
	}
	return b[:i], b[i+2:], true
}

// hostBytes reports whether b is a non-empty host of letters, digits and
// ".-_:[]", a subset of what net/http takes.
func hostBytes(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return true
}
