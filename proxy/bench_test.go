package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/proxy"
)

// The three benchmarks share one client loop, so that BenchmarkProxy over
// BenchmarkDirect is the cost of the proxy hop, and BenchmarkReject the
// cost of an overload answer, all over loopback keep-alive connections.

const benchResponse = `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}`

func benchEngine(b *testing.B) *url.URL {
	b.Helper()
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchResponse)
	}))
	b.Cleanup(eng.Close)
	u, err := url.Parse(eng.URL)
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// benchProxy serves a Proxy in front of engine through lim.
func benchProxy(b *testing.B, engine *url.URL, lim *limiter.Limiter, extra ...func(*gate.Options, *proxy.Options)) *url.URL {
	b.Helper()
	u, _ := benchProxyServer(b, engine, lim, extra...)
	return u
}

// benchProxyServer is benchProxy, with the front server it started.
func benchProxyServer(b *testing.B, engine *url.URL, lim *limiter.Limiter, extra ...func(*gate.Options, *proxy.Options)) (*url.URL, *http.Server) {
	b.Helper()
	gopts := gate.Options{Limiter: lim}
	opts := proxy.Options{Engine: engine} // the default engine client, as slotgate runs
	for _, f := range extra {
		f(&gopts, &opts)
	}
	g, err := gate.New(gopts)
	if err != nil {
		b.Fatal(err)
	}
	opts.Gate = g
	p, err := proxy.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	front := httptest.NewServer(p)
	b.Cleanup(front.Close)
	u, err := url.Parse(front.URL)
	if err != nil {
		b.Fatal(err)
	}
	return u, front.Config
}

// runClient measures GET target/v1/completions, serially and from
// parallel clients, each answer read to its end so that its connection is
// reused.
func runClient(b *testing.B, target *url.URL, want int) {
	u := target.JoinPath("/v1/completions").String()
	newClient := func(b *testing.B) *http.Client {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
		b.Cleanup(c.CloseIdleConnections)
		return c
	}
	hit := func(c *http.Client) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err == nil && resp.StatusCode != want {
			b.Errorf("status %d, want %d", resp.StatusCode, want)
		}
		return err
	}
	b.Run("serial", func(b *testing.B) {
		c := newClient(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := hit(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c := newClient(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := hit(c); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkDirect is the baseline: the client talks to the engine.
func BenchmarkDirect(b *testing.B) {
	runClient(b, benchEngine(b), http.StatusOK)
}

// BenchmarkProxy is the same exchange through a Proxy whose limiter never
// refuses (1024 slots).
func BenchmarkProxy(b *testing.B) {
	lim, err := limiter.New(limiter.Options{Slots: 1024})
	if err != nil {
		b.Fatal(err)
	}
	runClient(b, benchProxy(b, benchEngine(b), lim), http.StatusOK)
}

// BenchmarkProxyTracked is BenchmarkProxy as cmd/slotgate runs it: each
// request's tokens counted for the load report (load/inflight), a Changed
// hook, and an ORCA header on every answer.
func BenchmarkProxyTracked(b *testing.B) {
	lim, err := limiter.New(limiter.Options{Slots: 1024})
	if err != nil {
		b.Fatal(err)
	}
	const orca = "TEXT application_utilization=0.5, named_metrics.queued=0"
	runClient(b, benchProxy(b, benchEngine(b), lim, func(g *gate.Options, o *proxy.Options) {
		g.Flights = inflight.New(func() {})
		g.Changed = func() {}
		o.LoadReport = &proxy.LoadReport{Key: "endpoint-load-metrics", Value: func(http.Header) string { return orca }}
	}), http.StatusOK)
}

// BenchmarkReject measures the overload answer: every slot is held and
// there is no queue, so every request gets 529 without reaching the engine.
func BenchmarkReject(b *testing.B) {
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		b.Fatal(err)
	}
	release, err := lim.Acquire(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release.Release)
	runClient(b, benchProxy(b, benchEngine(b), lim), 529)
}
