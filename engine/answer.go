package engine

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/slotgate/slotgate/internal/httpsyntax"
)

// readAnswer reads the head of the engine's answer to req from br, as
// http.ReadResponse reads it. The common answer (HTTP/1.1, a final
// status, a body of a stated length or chunked, nothing ReadResponse
// would rewrite but the transfer coding), whose head has come whole into
// br's buffer, is read by parseAnswer into parts (the exchange's:
// conn.parts), in one allocation (the head's string) once the parts were
// used before, two for a chunked one, where ReadResponse makes eleven (a
// text reader, the header map, a string for each value, a canonical copy
// of each lower-case name, a transfer reader, the body and its limit)
// and takes 60% longer, three times as long for a stream's head. Any
// other answer is ReadResponse's, from the same unread bytes.
func readAnswer(br *bufio.Reader, req *http.Request, parts *answerParts) (*http.Response, error) {
	if head := peekHead(br); head != nil {
		if resp, ok := parseAnswer(head, req, parts); ok {
			_, _ = br.Discard(len(head)) // buffered: never fails
			switch {
			case resp.TransferEncoding != nil:
				parts.chunked = newChunkedBody(br, resp)
				resp.Body = &parts.chunked
			case resp.ContentLength > 0:
				parts.length = lengthBody{r: br, left: resp.ContentLength}
				resp.Body = &parts.length
			}
			return resp, nil
		}
	}
	return http.ReadResponse(br, req)
}

// peekHead returns the answer's head, through its empty line, once it is
// whole in br's buffer, reading more while there is room; nil when it
// does not fit, or the read failed (ReadResponse then reads again and
// meets the failure itself).
func peekHead(br *bufio.Reader) []byte {
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return b[:i+4]
		}
		if len(b) == br.Size() {
			return nil
		}
		if _, err := br.Peek(len(b) + 1); err != nil {
			return nil
		}
	}
}

// parseAnswer reads head, a whole answer head, into the Response
// http.ReadResponse would make of it (parts' own), Body aside (NoBody
// when the length is 0), and reports true; or false when the answer is
// not of the shape it takes:
//   - the status line is "HTTP/1.1", a final status that allows a body
//     (not 1xx, 204 or 304), and a reason phrase of printable ASCII,
//     spaces and tabs;
//   - each header line is a token, a colon and a value of printable
//     ASCII, spaces and tabs (no line folding);
//   - exactly one Content-Length, digits only, or one Transfer-Encoding
//     "chunked" (in any case), with at most one valid Content-Length
//     beside, which ReadResponse then drops, as it drops the
//     Transfer-Encoding field; no Connection, Trailer or Pragma (each
//     of which ReadResponse acts on);
//   - req is not HEAD.
func parseAnswer(head []byte, req *http.Request, parts *answerParts) (*http.Response, bool) {
	if req != nil && req.Method == http.MethodHead {
		return nil, false
	}
	s := string(head) // the one copy: names and values are its substrings
	line, rest, _ := strings.Cut(s, "\r\n")
	status, ok := strings.CutPrefix(line, "HTTP/1.1 ")
	if !ok || len(status) < 3 || len(status) > 3 && status[3] != ' ' || !httpsyntax.FieldValue(status) {
		return nil, false
	}
	code := 0
	for _, c := range []byte(status[:3]) {
		if c < '0' || c > '9' {
			return nil, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false
	}
	length, chunked, ok := parts.parseFields(rest)
	if !ok || length < 0 && !chunked {
		return nil, false
	}
	parts.resp = http.Response{
		Status: status, StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: parts.header, ContentLength: length, Body: http.NoBody, Request: req,
	}
	if chunked {
		delete(parts.header, "Content-Length")
		parts.te[0] = "chunked"
		parts.resp.TransferEncoding, parts.resp.ContentLength = parts.te[:], -1
	}
	return &parts.resp, true
}

// parseFields reads the header lines of fields, which ends with an empty
// line, into p's header map as textproto.ReadMIMEHeader does (canonical
// names, values trimmed of spaces and tabs), but for Transfer-Encoding,
// and returns the Content-Length, or -1 when there is none, and whether
// the body is chunked; false refuses the fields (see parseAnswer). The
// map and the values' array are p's: made, or emptied by reset.
func (p *answerParts) parseFields(fields string) (length int64, chunked, ok bool) {
	n := strings.Count(fields, "\r\n") - 1 // lines before the empty one
	if p.header == nil {
		p.header = make(http.Header, n)
	}
	h := p.header
	values := slices.Grow(p.values[:0], n)[:n] // one backing array for every value
	p.values = values
	length = -1
	for i := range n {
		line, rest, _ := strings.Cut(fields, "\r\n")
		fields = rest
		name, value, found := strings.Cut(line, ":")
		if !found || !httpsyntax.Token(name) || !httpsyntax.FieldValue(value) {
			return 0, false, false
		}
		value = strings.Trim(value, " \t")
		name = canonicalName(name)
		switch name {
		case "Connection", "Trailer", "Pragma":
			return 0, false, false
		case "Transfer-Encoding":
			if chunked || !httpsyntax.EqualFold(value, "chunked") {
				return 0, false, false
			}
			chunked = true
			continue // ReadResponse takes it off the header
		case "Content-Length":
			if length >= 0 {
				return 0, false, false
			}
			if length, ok = httpsyntax.Decimal(value); !ok {
				return 0, false, false
			}
		}
		values[i] = value
		if vv, seen := h[name]; seen {
			h[name] = append(vv, value)
		} else {
			h[name] = values[i : i+1 : i+1]
		}
	}
	return length, chunked, true
}

// canonicalName is textproto.CanonicalMIMEHeaderKey of a token: the
// common names of an engine's answer as constants (uvicorn sends them in
// lower case, which would cost a new string each), others computed.
func canonicalName(name string) string {
	for _, c := range commonNames {
		if httpsyntax.EqualFold(name, c.lower) {
			return c.canonical
		}
	}
	return http.CanonicalHeaderKey(name)
}

var commonNames = [...]struct{ lower, canonical string }{
	{"content-type", "Content-Type"}, {"content-length", "Content-Length"}, {"date", "Date"},
	{"server", "Server"}, {"connection", "Connection"}, {"transfer-encoding", "Transfer-Encoding"},
	{"trailer", "Trailer"}, {"pragma", "Pragma"},
}

// lengthBody is an answer's body of a stated length, read from the
// connection's reader, as net/http's own: the last bytes come with
// io.EOF, and an answer cut short ends with io.ErrUnexpectedEOF. Closing
// it reads nothing (answerBody decides the connection's fate).
type lengthBody struct {
	r      *bufio.Reader
	left   int64
	closed bool
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *lengthBody) Close() error {
	b.closed = true
	return nil
}
