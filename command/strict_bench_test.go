package command

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkStrictListener: keep-alive POSTs with a small JSON body, one
// connection, through net/http with and without the strict listener in
// front: the listener's cost per request.
func BenchmarkStrictListener(b *testing.B) {
	for _, strict := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "strict"}[strict]
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Length", "2")
				_, _ = io.WriteString(w, "{}")
			}), MaxHeaderBytes: 1 << 20}
			served := ln
			if strict {
				served = newStrictListener(ln, srv, nil)
			}
			go func() { _ = srv.Serve(served) }()
			defer srv.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			body := `{"model":"m","prompt":"` + strings.Repeat("hello ", 100) + `","max_tokens":16,"stream":true}`
			req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nUser-Agent: bench\r\n" +
				"Authorization: Bearer sk-0123456789\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
			br := bufio.NewReader(c)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := io.WriteString(c, req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
