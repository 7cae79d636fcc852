package relay

import (
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"testing"
)

// parseAll feeds body to a fresh parser in pieces of at most step bytes
// (all at once when step is 0) and returns the data, the bytes framed,
// whether the body ended, and the error.
func parseAll(body []byte, step int) (data []byte, n int, done bool, err error) {
	var c chunkParser
	collect := func(p []byte) { data = append(data, p...) }
	for n < len(body) && !c.done() {
		end := len(body)
		if step > 0 {
			end = min(n+step, len(body))
		}
		k, err := c.feed(body[n:end], collect)
		n += k
		if err != nil {
			return data, n, false, err
		}
	}
	return data, n, c.done(), nil
}

func TestChunkParser(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		data     string
		framed   int // bytes of the body; -1: all of them
		done     bool
		malforms bool
	}{
		{name: "one chunk", body: "5\r\nhello\r\n0\r\n\r\n", data: "hello", framed: -1, done: true},
		{name: "events", body: "6\r\ndata: \r\n9\r\n{\"x\":1}\n\n\r\n0\r\n\r\n", data: "data: {\"x\":1}\n\n", framed: -1, done: true},
		{name: "upper hex, extension", body: "A;name=v\r\n0123456789\r\n0\r\n\r\n", data: "0123456789", framed: -1, done: true},
		{name: "whitespace after a size", body: "1 \t\r\nx\r\n0\r\n\r\n", data: "x", framed: -1, done: true},
		{name: "whitespace then an extension", body: "1 ;a\r\n", malforms: true},
		{name: "trailers", body: "1\r\nx\r\n0\r\nEndpoint-Load-Metrics: TEXT a=1\r\nX: y\r\n\r\n", data: "x", framed: -1, done: true},
		{name: "bytes after the end", body: "1\r\nx\r\n0\r\n\r\nHTTP/1.1 200", data: "x", framed: 11, done: true},
		{name: "not ended", body: "5\r\nhel", data: "hel", framed: -1},
		{name: "not ended after a chunk", body: "5\r\nhello\r\n", data: "hello", framed: -1},
		{name: "empty", body: "", framed: -1},
		{name: "bare LF after size", body: "5\nhello\r\n", malforms: true},
		{name: "no CRLF after data", body: "1\r\nxy\r\n", data: "x", malforms: true},
		{name: "not hex", body: "g\r\n", malforms: true},
		{name: "no size", body: "\r\n", malforms: true},
		{name: "size too large", body: "1000000000000000\r\n", malforms: true},
		{name: "bare LF in trailer", body: "0\r\nX: y\n\r\n", malforms: true},
		{name: "bad end", body: "0\r\n\rx", malforms: true},
	}
	for _, tt := range tests {
		for _, step := range []int{0, 1, 3} {
			data, n, done, err := parseAll([]byte(tt.body), step)
			if tt.malforms {
				if !errors.Is(err, errChunked) {
					t.Errorf("%s, step %d: err = %v, want a framing error", tt.name, step, err)
				}
				continue
			}
			want := tt.framed
			if want < 0 {
				want = len(tt.body)
			}
			if err != nil || string(data) != tt.data || n != want || done != tt.done {
				t.Errorf("%s, step %d: data %q, framed %d, done %v, err %v; want %q, %d, %v, nil",
					tt.name, step, data, n, done, err, tt.data, want, tt.done)
			}
		}
	}
}

// FuzzChunkParser checks the parser against net/http's chunked reader: a
// body it frames to its end decodes to the same data there, and the way
// the bytes are split never changes what it finds.
func FuzzChunkParser(f *testing.F) {
	for _, s := range []string{"5\r\nhello\r\n0\r\n\r\n", "1;a=b\r\nx\r\n0\r\nT: v\r\n\r\nrest", "3\r\nab", "0\r\n\r\n", "F\r\n"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		data, n, done, err := parseAll(body, 0)
		data2, n2, done2, err2 := parseAll(body, int(step%8)+1)
		if !bytes.Equal(data, data2) || n != n2 || done != done2 || (err == nil) != (err2 == nil) {
			t.Fatalf("split changed the result: %q %d %v %v against %q %d %v %v", data, n, done, err, data2, n2, done2, err2)
		}
		if err != nil || !done {
			return
		}
		got, rerr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body[:n])))
		if rerr != nil || !bytes.Equal(got, data) {
			t.Fatalf("net/http decodes %q (%v), the parser %q", got, rerr, data)
		}
	})
}

// FuzzLead: what Lead takes is whole chunks of the body that do not end
// it, whose data LeadData gives as a parser gives it; a fresh parser fed the rest
// frames it to the same end, data and error as one fed the whole body.
func FuzzLead(f *testing.F) {
	for _, s := range []string{"5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n", "1;a=b\r\nx\r\n2\r\nyz", "3\r\nab", "0\r\n\r\n",
		"f\r\ndata: {\"i\":0}\n\n\r\n", "2\r\nab\r\nzz"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var lead []byte
		n := Lead(body)
		if n < 0 || n > len(body) {
			t.Fatalf("Lead took %d of %d bytes", n, len(body))
		}
		LeadData(body[:n], func(p []byte) { lead = append(lead, p...) })
		data, k, done, err := parseAll(body[:n], 0)
		if err != nil || done || k != n || !bytes.Equal(data, lead) {
			t.Fatalf("the lead %q frames to %d bytes, ended %v, %v, data %q; Lead gave %q", body[:n], k, done, err, data, lead)
		}
		whole, wk, wdone, werr := parseAll(body, 0)
		rest, rk, rdone, rerr := parseAll(body[n:], 0)
		if !bytes.Equal(append(lead, rest...), whole) || n+rk != wk || rdone != wdone || (rerr == nil) != (werr == nil) {
			t.Fatalf("lead %d + rest: %q, %d, %v, %v; whole: %q, %d, %v, %v", n, append(lead, rest...), n+rk, rdone, rerr, whole, wk, wdone, werr)
		}
	})
}

// TestLead: whole chunks before the body's end are taken; a cut chunk,
// the last chunk and a broken frame are not.
func TestLead(t *testing.T) {
	for _, tc := range []struct {
		body string
		n    int
	}{
		{"f\r\ndata: {\"i\":0}\n\n\r\n", 20},
		{"5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n", 18},
		{"5\r\nhello\r\n3\r\nab", 10},
		{"5\r\nhello", 0},
		{"0\r\n\r\n", 0},
		{"5\r\nhello\r\nzz", 10},
		{"", 0},
	} {
		if n := Lead([]byte(tc.body)); n != tc.n {
			t.Errorf("Lead(%q) = %d, want %d", tc.body, n, tc.n)
		}
	}
}
