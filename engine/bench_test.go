package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/engine"
)

const benchAnswer = `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}`

// BenchmarkDo measures one POST with a small in-memory body and its answer
// read to its end, over loopback keep-alive connections: through Do's
// hand-written path, and through net/http's Transport as configured for
// the engine, to compare.
func BenchmarkDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchAnswer)
	}))
	b.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	target := u.JoinPath("/v1/completions").String()
	body := []byte(`{"model":"m","prompt":"` + strings.Repeat("hello ", 20) + `","max_tokens":1}`)

	c := newClient(b, engine.Options{URL: u})
	tr := engine.NewTransport(1024)
	b.Cleanup(tr.CloseIdleConnections)
	paths := []struct {
		name string
		do   func(req *http.Request) (*http.Response, error)
	}{
		{name: "direct", do: func(req *http.Request) (*http.Response, error) { return c.Do(req, body) }},
		{name: "net-http", do: tr.RoundTrip},
	}
	// hit returns its failure rather than stopping the benchmark: it runs
	// on RunParallel's goroutines too.
	hit := func(ctx context.Context, do func(*http.Request) (*http.Response, error)) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return err
	}
	for _, p := range paths {
		b.Run(p.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := hit(b.Context(), p.do); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := hit(b.Context(), p.do); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
