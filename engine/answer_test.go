package engine

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzReadAnswer: readAnswer reads any answer exactly as
// http.ReadResponse does, whether parseAnswer takes it or leaves it to
// ReadResponse: the same status, protocol, header map, length, Close,
// transfer coding and trailers, or an error where ReadResponse errs; and
// the same body bytes, ending the same way (io.EOF, or
// io.ErrUnexpectedEOF when cut short), also when the bytes come one at
// a time, and when it reads into parts an earlier answer filled and gave
// back (Client.Recycle): nothing of that answer shows.
func FuzzReadAnswer(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\ndate: x\r\nserver: uvicorn\r\n\r\n{}", false)
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nx-a:  2 \t\r\n\r\nab", false)
	f.Add("HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\ncontent-length: 9\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n", false)
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", true)
	f.Add("HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", false)
	f.Add("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na", false)
	f.Add("HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 1\r\n\r\na", false)
	f.Add("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na", false)
	f.Add("HTTP/1.1 200 OK\nContent-Length: 1\n\n\r\n\r\na", false)
	f.Add("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 1\r\n\r\na", false)
	f.Fuzz(func(t *testing.T, raw string, head bool) {
		req, _ := http.NewRequest(http.MethodPost, "http://engine/v1/completions", nil)
		if head {
			req.Method = http.MethodHead
		}
		for _, oneByte := range []bool{false, true} {
			read := func(parse func(*bufio.Reader, *http.Request) (*http.Response, error)) (*http.Response, string, error, error) {
				var src io.Reader = strings.NewReader(raw)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				resp, err := parse(bufio.NewReaderSize(src, 64), req)
				if err != nil {
					return nil, "", err, nil
				}
				body, berr := io.ReadAll(resp.Body)
				return resp, string(body), nil, berr
			}
			want, wantBody, wantErr, wantBodyErr := read(http.ReadResponse)
			got, gotBody, gotErr, gotBodyErr := read(func(br *bufio.Reader, req *http.Request) (*http.Response, error) {
				return readAnswer(br, req, usedParts(t))
			})
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%q: readAnswer err %v, ReadResponse err %v", raw, gotErr, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
				got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor ||
				got.ContentLength != want.ContentLength || got.Close != want.Close || got.Request != want.Request ||
				!reflect.DeepEqual(got.Header, want.Header) || !reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) ||
				!reflect.DeepEqual(got.Trailer, want.Trailer) {
				t.Fatalf("%q:\nreadAnswer   %+v\nReadResponse %+v", raw, got, want)
			}
			if gotBody != wantBody || !errors.Is(gotBodyErr, wantBodyErr) && (gotBodyErr == nil || wantBodyErr == nil || gotBodyErr.Error() != wantBodyErr.Error()) {
				t.Fatalf("%q: body %q, %v; ReadResponse's %q, %v", raw, gotBody, gotBodyErr, wantBody, wantBodyErr)
			}
		}
	})
}

// usedParts returns answer parts that read an answer of many fields and
// were reset, as Client.Recycle resets them.
func usedParts(t *testing.T) *answerParts {
	parts := &answerParts{}
	const earlier = "HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-A: 1\r\nX-B: 2\r\n" +
		"X-C: 3\r\nX-D: 4\r\nX-E: 5\r\nX-F: 6\r\nX-G: 7\r\nX-H: 8\r\nX-I: 9\r\n\r\n"
	if _, ok := parseAnswer([]byte(earlier), nil, parts); !ok {
		t.Fatal("parseAnswer left the earlier answer to ReadResponse")
	}
	parts.reset()
	return parts
}

// TestParseAnswerTakes: the common answers, a stream's chunked one
// included, take the fast way (a fallback to ReadResponse for all of them
// would pass FuzzReadAnswer too).
func TestParseAnswerTakes(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://engine/v1/completions", nil)
	for _, head := range []string{
		"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\ndate: Fri, 04 Dec 2026 22:00:00 GMT\r\nserver: uvicorn\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: x\r\nContent-Length: 128\r\n\r\n",
		"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200\r\nX-Request-Id: a\r\nx-request-id: b\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\ndate: x\r\nserver: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Length: 3\r\n\r\n",
	} {
		if _, ok := parseAnswer([]byte(head), req, &answerParts{}); !ok {
			t.Errorf("parseAnswer left %q to ReadResponse", head)
		}
	}
}

// BenchmarkReadAnswer: the head of an engine's answer read into parts
// given back after each (Client.Recycle), for a plain answer of a stated
// length and for a stream's chunked answer.
func BenchmarkReadAnswer(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "http://engine/v1/completions", nil)
	for _, bc := range []struct{ name, head string }{
		{"length", "HTTP/1.1 200 OK\r\ndate: Sun, 06 Dec 2026 12:00:00 GMT\r\nserver: uvicorn\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}"},
		{"chunked", "HTTP/1.1 200 OK\r\ndate: Sun, 06 Dec 2026 12:00:00 GMT\r\nserver: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			parts := &answerParts{}
			r := strings.NewReader(bc.head)
			br := bufio.NewReaderSize(r, 4096)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(bc.head)
				br.Reset(r)
				if _, err := readAnswer(br, req, parts); err != nil {
					b.Fatal(err)
				}
				parts.reset()
			}
		})
	}
}
