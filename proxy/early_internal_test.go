package proxy

import (
	"bufio"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// FuzzParseEarlyHead: a head parseEarlyHead takes is one net/http's
// server reads without error (ReadRequest, then the server's own checks
// of the Host and of every header) into the same request: method, path,
// HTTP/1.1, the first X-Request-Id, the Content-Length, and no header that
// makes the proxy or net/http handle it otherwise.
func FuzzParseEarlyHead(f *testing.F) {
	f.Add("POST /v1/completions HTTP/1.1\r\nHost: a:80\r\nContent-Length: 4\r\nX-Request-Id: r\r\n\r\n")
	f.Add("GET /a?b=%zz HTTP/1.1\r\nHost: [::1]\r\nx-request-id: \t a b \t\r\nX-Request-Id: c\r\n\r\n")
	f.Add("POST /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n")
	f.Add("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\nUser-Agent: \tcurl\r\n\r\n")
	f.Add("POST /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Keep-Alive\r\nKeep-Alive: timeout=5\r\n\r\n")
	f.Add("POST /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive,close\r\n\r\n")
	f.Fuzz(func(t *testing.T, head string) {
		h, ok := parseEarlyHead([]byte(head))
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Fatalf("parseEarlyHead took %q, which net/http refuses: %v", head, err)
		}
		// ReadRequest drops the Host header, which the server checks first.
		_, fields, _ := strings.Cut(head, "\r\n")
		mh, err := textproto.NewReader(bufio.NewReader(strings.NewReader(fields))).ReadMIMEHeader()
		if hosts := mh["Host"]; err != nil || len(hosts) != 1 || !httpguts.ValidHostHeader(hosts[0]) {
			t.Fatalf("parseEarlyHead took %q, whose Host net/http's server refuses: %q (%v)", head, hosts, err)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
					t.Fatalf("parseEarlyHead took %q, whose header %q: %q net/http's server refuses", head, k, v)
				}
			}
		}
		if r.Method != string(h.method) || r.URL.Path != string(h.path) || r.Proto != "HTTP/1.1" ||
			r.Header.Get(requestIDHeader) != string(h.requestID) || max(r.ContentLength, 0) != h.contentLength {
			t.Fatalf("%q: parseEarlyHead read %s %s id %q length %d; net/http %s %s %s id %q length %d", head,
				h.method, h.path, h.requestID, h.contentLength, r.Method, r.URL.Path, r.Proto, r.Header.Get(requestIDHeader), r.ContentLength)
		}
		if r.Close || len(r.TransferEncoding) > 0 || r.Header.Get(RankHeader) != "" || r.Header.Get(RefusedHeader) != "" ||
			r.Header.Get("Upgrade") != "" || r.Header.Get("Expect") != "" || r.Header.Get("Http2-Settings") != "" ||
			strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			t.Fatalf("%q: parseEarlyHead took a request net/http or the proxy handles otherwise: %v", head, r.Header)
		}
	})
}
