package scrape_test

import (
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load/scrape"
)

func newKeepingScraper(t *testing.T, d scrape.Dialect, rt http.RoundTripper) *scrape.Scraper {
	t.Helper()
	s, err := scrape.New(scrape.Options{
		EngineURL: mustURL(t, "http://engine.test:8000"), Dialect: d, Client: &http.Client{Transport: rt},
		KeepExposition: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExpositionKept: the text of each successful scrape is kept as it
// came, with its time; failures count up to stale and keep the text; a
// body that does not parse is never kept.
func TestExpositionKept(t *testing.T) {
	tests := []struct {
		name    string
		dialect scrape.Dialect
		push    func(sc *script, t *testing.T)
		want    string // the kept text after the first scrape
	}{
		{name: "vllm keeps the /metrics it parsed", dialect: scrape.DialectVLLM,
			push: func(sc *script, t *testing.T) { sc.push("/metrics", body(t, "vllm_dp2.txt")) },
			want: "vllm_dp2.txt"},
		{name: "sglang reads /metrics after /v1/loads", dialect: scrape.DialectSGLang,
			push: func(sc *script, t *testing.T) {
				sc.push("/v1/loads", body(t, "sglang_loads_dp2.json"))
				sc.push("/server_info", body(t, "sglang_server_info.json"))
				sc.push("/metrics", "sglang:num_queue_reqs{dp_rank=\"0\"} 2\n")
			},
			want: "sglang:num_queue_reqs{dp_rank=\"0\"} 2\n"},
		{name: "auto keeps the body detection read", dialect: scrape.DialectAuto,
			push: func(sc *script, t *testing.T) { sc.push("/metrics", body(t, "vllm_dp2.txt")) },
			want: "vllm_dp2.txt"},
		{name: "trtllm has no text", dialect: scrape.DialectTRTLLM,
			push: func(sc *script, t *testing.T) { sc.push("/metrics", body(t, "trtllm_iterations_dp2.json")) }},
		{name: "a body that does not parse is not kept", dialect: scrape.DialectVLLM,
			push: func(sc *script, t *testing.T) { sc.push("/metrics", "vllm:num_requests_waiting{engine=\"x\"} 1\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := &script{}
				tt.push(sc, t)
				s := newKeepingScraper(t, tt.dialect, sc)
				if got := s.Exposition(); got.Text != nil {
					t.Fatalf("before any scrape: %+v", got)
				}
				start := time.Now()
				startScraper(t, s)
				synctest.Wait()
				got := s.Exposition()
				want := tt.want
				if want == "vllm_dp2.txt" {
					want = body(t, want)
				}
				if string(got.Text) != want || (want != "" && !got.At.Equal(start)) {
					t.Fatalf("kept %q at %v, want %q at %v", got.Text, got.At, want, start)
				}
			})
		})
	}
}

// TestExpositionStale: failed scrapes keep the last text, counted, stale
// from the StaleAfter-th, as EngineLoad is.
func TestExpositionStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "vllm_dp2.txt"))
		s := newKeepingScraper(t, scrape.DialectVLLM, sc)
		startScraper(t, s)
		synctest.Wait()
		first := s.Exposition()
		sc.setFailing(true)
		for i := 1; i <= scrape.StaleAfter; i++ {
			time.Sleep(scrape.DefaultInterval)
			synctest.Wait()
			got := s.Exposition()
			if got.FailedScrapes != i || got.Stale() != (i >= scrape.StaleAfter) || &got.Text[0] != &first.Text[0] || got.Err == "" {
				t.Fatalf("after %d failures: %d failed, stale %v, err %q", i, got.FailedScrapes, got.Stale(), got.Err)
			}
		}
		sc.setFailing(false)
		time.Sleep(scrape.DefaultInterval)
		synctest.Wait()
		if got := s.Exposition(); got.Stale() || got.FailedScrapes != 0 {
			t.Errorf("after recovery: %d failed", got.FailedScrapes)
		}
	})
}

// TestExpositionOffKeepsNothing: without KeepExposition nothing is kept,
// and SGLang's /metrics is not read on each scrape.
func TestExpositionOffKeepsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "vllm_dp2.txt"))
		s := newScraper(t, scrape.DialectVLLM, sc, scrape.Overrides{}, nil)
		startScraper(t, s)
		synctest.Wait()
		if got := s.Exposition(); got.Text != nil || got.FailedScrapes != 0 {
			t.Errorf("Exposition = %+v, want nothing kept", got)
		}
	})
}
