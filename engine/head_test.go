package engine

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// headCase builds a request of the hand-written path from a fuzzer's
// strings: headers is "Key: value" lines, body is sent whole.
func headCase(method, target, host, headers, body string) (*http.Request, bool) {
	u, err := url.Parse("http://" + host + target)
	if err != nil || u.Host != host {
		return nil, false
	}
	req := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: host}
	for line := range strings.SplitSeq(headers, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok {
			req.Header[k] = append(req.Header[k], v)
		}
	}
	if body != "" {
		req.Body, req.ContentLength = bodyReader([]byte(body)), int64(len(body))
	}
	return req, true
}

// FuzzRequestHead checks that serialize writes, byte for byte, what
// net/http's Request.Write writes, for any request it writes itself.
func FuzzRequestHead(f *testing.F) {
	f.Add("POST", "/v1/chat/completions?stream=true", "127.0.0.1:8000",
		"Content-Type: application/json\nX-Request-Id: abc\nX-Forwarded-For: 1.2.3.4, 127.0.0.1\nUser-Agent: ", `{"model":"m"}`)
	f.Add("GET", "/health", "engine", "Accept: */*\nAccept: text/plain", "")
	f.Add("HEAD", "/", "[::1]:80", "X-Empty: ", "")
	f.Add("DELETE", "/x", "h", "", "")
	f.Add("POST", "/", "h", "", "")
	f.Add("PUT", "/a%20b", "h", "X-Odd: a\r\nInjected: b", "b")
	f.Add("", "/", "h", "x-lower: 1\nHost: other\nContent-Length: 99\nTransfer-Encoding: chunked\nTrailer: X", "")
	f.Add("POST", "/", "h", "X-Space:  padded \nBad Key: v\nUser-Agent: agent/1", "z")
	f.Fuzz(func(t *testing.T, method, target, host, headers, body string) {
		req, ok := headCase(method, target, host, headers, body)
		if !ok {
			return
		}
		want := new(bytes.Buffer)
		wantErr := req.Write(want)
		if body != "" {
			req.Body = bodyReader([]byte(body))
		}
		if _, ok := appendHead(nil, req, req.ContentLength); !ok {
			return // Request.Write's, by design
		}
		got := new(bytes.Buffer)
		err := serialize(got, req)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("serialize: %v\n%q\nRequest.Write: %v\n%q", err, got, wantErr, want)
		}
	})
}

// TestAppendHeadDeclines lists the requests appendHead leaves to
// Request.Write.
func TestAppendHeadDeclines(t *testing.T) {
	base := func() *http.Request {
		req, _ := headCase("POST", "/", "h", "X: y", "b")
		return req
	}
	for _, tc := range []struct {
		name   string
		change func(*http.Request)
	}{
		{"a zone in the host", func(r *http.Request) { r.Host = "[fe80::1%25eth0]:80" }},
		{"a host to encode", func(r *http.Request) { r.Host = "bücher.example" }},
		{"a control byte in the URL", func(r *http.Request) { r.URL.RawQuery = "a=\x7f" }},
		{"a header name Request.Write drops", func(r *http.Request) { r.Header["Bad Key"] = []string{"v"} }},
		{"a value with a line break", func(r *http.Request) { r.Header["X"] = []string{"a\nb"} }},
		{"a value to trim", func(r *http.Request) { r.Header["X"] = []string{" a"} }},
		{"trailers", func(r *http.Request) { r.Trailer = http.Header{"T": nil} }},
		{"a transfer coding", func(r *http.Request) { r.TransferEncoding = []string{"chunked"} }},
		{"Close", func(r *http.Request) { r.Close = true }},
		{"CONNECT", func(r *http.Request) { r.Method = http.MethodConnect }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			if _, ok := appendHead(nil, req, req.ContentLength); !ok {
				t.Fatal("the base request is declined")
			}
			tc.change(req)
			if b, ok := appendHead(nil, req, req.ContentLength); ok {
				t.Fatalf("appended %q", b)
			}
		})
	}
}

// TestSerializeRefusesALongBody: a body longer than its ContentLength is
// an error, as Request.Write makes it, not a body cut short.
func TestSerializeRefusesALongBody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		wantErr bool
	}{
		{"exact", "abc", false},
		{"longer", "abcd", true},
		{"shorter", "ab", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := headCase("POST", "/", "h", "X: y", "abc")
			req.Body = io.NopCloser(strings.NewReader(tc.body))
			var buf bytes.Buffer
			err := serialize(&buf, req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("serialize = %v, want an error: %v (wrote %q)", err, tc.wantErr, buf.String())
			}
			var want bytes.Buffer
			req.Body = io.NopCloser(strings.NewReader(tc.body))
			if werr := req.Write(&want); (werr != nil) != tc.wantErr {
				t.Fatalf("Request.Write = %v: the two disagree", werr)
			}
		})
	}
}
