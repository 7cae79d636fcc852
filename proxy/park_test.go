package proxy

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// FuzzAppendRequest: a request written back by appendRequest, as a
// parked request is given back to the server, reads as the request the
// server read first: method, target, host, headers and body.
func FuzzAppendRequest(f *testing.F) {
	f.Add("POST /v1/completions?x=1&y=%20z HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-A: 2\r\nContent-Length: 4\r\n\r\nbody")
	f.Add("GET / HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n")
	f.Add("POST http://h/p HTTP/1.1\r\nHost: h\r\nX-Odd: a  b\r\nContent-Length: 0\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		first, err := http.ReadRequest(bufio.NewReader(bytes.NewBufferString(raw)))
		if err != nil || first.ProtoMajor != 1 || first.ProtoMinor != 1 || len(first.TransferEncoding) > 0 || first.ContentLength < 0 {
			return // parkable requests only: HTTP/1.1 with a declared length
		}
		body, err := io.ReadAll(first.Body)
		if err != nil {
			return
		}
		again, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(appendRequest(nil, first, body))))
		if err != nil {
			t.Fatalf("written back, the request does not read: %v", err)
		}
		body2, err := io.ReadAll(again.Body)
		if err != nil {
			t.Fatal(err)
		}
		if again.Method != first.Method || again.RequestURI != first.RequestURI || again.Host != first.Host ||
			again.ContentLength != first.ContentLength || !bytes.Equal(body, body2) || again.Close != first.Close {
			t.Fatalf("read back as %s %s host %q length %d close %v body %q; want %s %s host %q length %d close %v body %q",
				again.Method, again.RequestURI, again.Host, again.ContentLength, again.Close, body2,
				first.Method, first.RequestURI, first.Host, first.ContentLength, first.Close, body)
		}
		// Header.Write leaves out names that are no header names, as the
		// engine's request head does: the engine never gets those.
		maps.DeleteFunc(first.Header, func(k string, _ []string) bool { return !httpguts.ValidHeaderFieldName(k) })
		if !maps.EqualFunc(again.Header, first.Header, slices.Equal) {
			t.Fatalf("headers read back as %v, want %v", again.Header, first.Header)
		}
	})
}
