package proxy

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzAppendEngineRequest: for every head the front end forwards itself,
// the engine reads the request appendEngineRequest writes as it reads the
// one the plain path builds from net/http's reading of the same head
// (engineRequest, written by Request.Write): method, target, Host, every
// field, the body's length.
func FuzzAppendEngineRequest(f *testing.F) {
	f.Add("POST /v1/completions?a=b HTTP/1.1\r\nHost: slotgate:8080\r\nContent-Type: application/json\r\n" +
		"X-Request-Id: client-7\r\nContent-Length: 15\r\n\r\n")
	f.Add("POST /a HTTP/1.1\r\nhost: x\r\nConnection: keep-alive\r\nKeep-Alive: timeout=9\r\nTE: gzip, trailers\r\n" +
		"X-Forwarded-For: 10.0.0.1\r\nx-forwarded-for: \r\nForwarded: for=1.2.3.4\r\nUser-Agent: \r\nUser-Agent: b\r\n" +
		"Accept: */*\r\naccept: text/plain\r\nIdempotency-Key: k\r\ncontent-length: 2\r\n\r\n")
	f.Add("GET /x HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8\r\nProxy-Authorization: s\r\nX-Empty:\r\n\r\n")
	p := &Proxy{engineURL: &url.URL{Scheme: "http", Host: "engine:8000"}}
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5555}
	f.Fuzz(func(t *testing.T, head string) {
		h, ok := parseEarlyHead([]byte(head))
		if !ok || !plainTarget(h.target, false) {
			return
		}
		raw, _, ok := p.appendEngineRequest(nil, []byte(head), &h, "id-1", remote)
		if !ok {
			return
		}
		got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("%q: the engine cannot read the front end's request %q: %v", head, raw, err)
		}
		in, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Fatalf("%q: net/http refuses it: %v", head, err)
		}
		in.RemoteAddr = remote.String()
		ex := &exchange{p: p, in: in, r: in}
		ex.ID = "id-1"
		out := ex.engineRequest()
		if h.contentLength > 0 { // as the engine client sends the held body
			out.Body = io.NopCloser(strings.NewReader(strings.Repeat("x", int(h.contentLength))))
		}
		var wire bytes.Buffer
		if err := out.Write(&wire); err != nil {
			t.Fatalf("%q: the plain path's request: %v", head, err)
		}
		want, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("%q: the engine cannot read the plain path's request: %v", head, err)
		}
		if got.Method != want.Method || got.RequestURI != want.RequestURI || got.Host != want.Host ||
			got.ContentLength != want.ContentLength {
			t.Fatalf("%q: the front end sends %s %s Host %s length %d, the plain path %s %s Host %s length %d", head,
				got.Method, got.RequestURI, got.Host, got.ContentLength, want.Method, want.RequestURI, want.Host, want.ContentLength)
		}
		if !maps.EqualFunc(got.Header, want.Header, slices.Equal) {
			t.Fatalf("%q: the front end sends\n%v\nthe plain path\n%v", head, got.Header, want.Header)
		}
	})
}

// TestClientAddr: a client's address with its text made once reads as the
// address it wraps, in the access log (String) and in X-Forwarded-For
// (appendClientIP), for TCP addresses of both families and for others.
func TestClientAddr(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 4242},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1},
		&net.UnixAddr{Name: "@sock", Net: "unix"},
	} {
		ca := NewClientAddr(a)
		if ca.String() != a.String() || ca.Network() != a.Network() {
			t.Errorf("%v: reads as %s %s", a, ca.Network(), ca.String())
		}
		want, wantOK := appendClientIP(nil, a)
		got, ok := appendClientIP(nil, ca)
		if string(got) != string(want) || ok != wantOK {
			t.Errorf("%v: X-Forwarded-For %q %v, want %q %v", a, got, ok, want, wantOK)
		}
	}
}
