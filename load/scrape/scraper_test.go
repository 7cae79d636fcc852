package scrape_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/scrape"
)

// startScraper runs sc.Run until the test ends; call inside a bubble.
func startScraper(t *testing.T, sc *scrape.Scraper) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := sc.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func newScraper(t *testing.T, d scrape.Dialect, rt http.RoundTripper, o scrape.Overrides, log *logs) *scrape.Scraper {
	t.Helper()
	opts := scrape.Options{
		EngineURL: mustURL(t, "http://engine.test:8000"), Dialect: d, Client: &http.Client{Transport: rt}, Overrides: o,
	}
	if log != nil {
		opts.Logger = slog.New(log)
	}
	sc, err := scrape.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestStaleAfterThreeFailures: the snapshot turns stale on exactly the
// third consecutive failure, keeps the last values and their time, logs
// once, and is fresh again on the next success.
func TestStaleAfterThreeFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "vllm_dp2.txt"))
		log := &logs{}
		s := newScraper(t, scrape.DialectVLLM, sc, scrape.Overrides{}, log)
		start := time.Now()
		startScraper(t, s)
		synctest.Wait()
		first := s.Load()
		if first.Stale || !first.At.Equal(start) || len(first.Ranks) != 2 || first.Dialect != scrape.DialectVLLM {
			t.Fatalf("after the first scrape: %+v", first)
		}
		sc.setFailing(true)
		for i := 1; i <= 5; i++ {
			time.Sleep(scrape.DefaultInterval)
			synctest.Wait()
			got := s.Load()
			if wantStale := i >= scrape.StaleAfter; got.Stale != wantStale || got.FailedScrapes != i {
				t.Fatalf("after %d failures: stale %v, failed %d; want stale %v", i, got.Stale, got.FailedScrapes, wantStale)
			}
			if !got.At.Equal(start) || !equalSlices(got.Ranks, first.Ranks) || !strings.Contains(got.Err, "connection refused") {
				t.Fatalf("after %d failures the values changed: %+v", i, got)
			}
		}
		if n := log.count("stale"); n != 1 {
			t.Errorf("logged stale %d times, want once", n)
		}
		sc.setFailing(false)
		time.Sleep(scrape.DefaultInterval)
		synctest.Wait()
		got := s.Load()
		if got.Stale || got.FailedScrapes != 0 || got.Err != "" || !got.At.Equal(start.Add(6*scrape.DefaultInterval)) {
			t.Errorf("after recovery: %+v", got)
		}
		if n := log.count("fresh again"); n != 1 {
			t.Errorf("logged recovery %d times, want once", n)
		}
	})
}

// TestTRTLLMDrain: an empty answer keeps every rank's values; an answer
// for one rank keeps the other's.
func TestTRTLLMDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "trtllm_iterations_dp2.json"), "[]",
			`[{"iter":3991,"attentionDpRank":1,"numActiveRequests":0,"numQueuedRequests":0,"kvCacheStats":{"maxNumBlocks":4592,"usedNumBlocks":0,"tokensPerBlock":32}}]`)
		s := newScraper(t, scrape.DialectTRTLLM, sc, scrape.Overrides{}, nil)
		startScraper(t, s)
		synctest.Wait()
		full := s.Load()
		time.Sleep(scrape.DefaultInterval)
		synctest.Wait()
		drained := s.Load()
		if !equalSlices(drained.Ranks, full.Ranks) || drained.Stale || !drained.At.After(full.At) {
			t.Fatalf("after []: %+v, want the values of %+v, fresh", drained, full)
		}
		time.Sleep(scrape.DefaultInterval)
		synctest.Wait()
		got := s.Load()
		if got.Ranks[0] != full.Ranks[0] {
			t.Errorf("rank 0 changed: %+v, want %+v", got.Ranks[0], full.Ranks[0])
		}
		if r := got.Ranks[1]; r.NumRequestsRunning != e(0) || r.KVUsedBlocks != e(0) || r.ActivePrefillTokens.Known() {
			t.Errorf("rank 1 = %+v, want its new values", r)
		}
	})
}

// TestOverrides: static values fill only what the engine leaves unknown.
func TestOverrides(t *testing.T) {
	o := scrape.Overrides{KVTotalBlocks: 1, BlockSize: 64, MaxNumBatchedTokens: 8192, DataParallelSize: 3}
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "vllm_dp2.txt"))
		s := newScraper(t, scrape.DialectVLLM, sc, o, nil)
		startScraper(t, s)
		synctest.Wait()
		got := s.Load().Ranks
		want := []load.Rank{
			// num_gpu_blocks 54690 divided by DataParallelSize 3.
			{DPRank: 0, KVTotalBlocks: e(18230), KVUsedBlocks: e(4557), NumRequestsRunning: e(3), NumRequestsWaiting: e(12),
				MaxNumBatchedTokens: st(8192), BlockSize: e(16)},
			{DPRank: 1, KVTotalBlocks: e(18230), KVUsedBlocks: e(9115), NumRequestsRunning: e(5), NumRequestsWaiting: e(0),
				MaxNumBatchedTokens: st(8192), BlockSize: e(16)},
			{DPRank: 2, KVTotalBlocks: st(1), MaxNumBatchedTokens: st(8192), BlockSize: st(64)},
		}
		equalRanks(t, got, want)
	})
	none, err := scrape.New(scrape.Options{Dialect: scrape.DialectNone, Overrides: scrape.Overrides{KVTotalBlocks: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if got := none.Load(); got.Dialect != scrape.DialectNone || len(got.Ranks) != 1 || got.Ranks[0].KVTotalBlocks != st(100) || !got.At.IsZero() {
		t.Errorf("dialect none: %+v", got)
	}
}

// TestLoadIsACopy: a caller that changes its snapshot changes nobody
// else's.
func TestLoadIsACopy(t *testing.T) {
	s, err := scrape.New(scrape.Options{Dialect: scrape.DialectNone, Overrides: scrape.Overrides{DataParallelSize: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Load()
	a.Ranks[0].DPRank = 7
	if b := s.Load(); b.Ranks[0].DPRank != 0 {
		t.Errorf("Load shares its ranks: %+v", b)
	}
}

func TestAutoUnrecognised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", "sglang:num_running_reqs 3\n")
		s := newScraper(t, scrape.DialectAuto, sc, scrape.Overrides{}, nil)
		startScraper(t, s)
		time.Sleep(2 * scrape.DefaultInterval)
		synctest.Wait()
		got := s.Load()
		if got.Dialect != "" || got.FailedScrapes != 3 || !got.Stale || !strings.Contains(got.Err, "recognised") {
			t.Errorf("got %+v, want 3 failed detections", got)
		}
	})
}

func TestNewValidates(t *testing.T) {
	u := mustURL(t, "http://127.0.0.1:8000")
	for _, tt := range []struct {
		name string
		opts scrape.Options
		want []string
	}{
		{"unknown dialect", scrape.Options{EngineURL: u, Dialect: "tgi"}, []string{`unknown dialect "tgi"`}},
		{"no URL", scrape.Options{}, []string{"EngineURL"}},
		{"not http", scrape.Options{EngineURL: mustURL(t, "unix:///run/engine.sock")}, []string{"EngineURL"}},
		{"every problem at once", scrape.Options{EngineURL: u, Interval: -1, Overrides: scrape.Overrides{BlockSize: -16, DataParallelSize: -1}},
			[]string{"Interval", "BlockSize", "DataParallelSize"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scrape.New(tt.opts)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v, want it to mention %q", err, w)
				}
			}
		})
	}
	if _, err := scrape.New(scrape.Options{Dialect: scrape.DialectNone}); err != nil {
		t.Errorf("dialect none needs no URL: %v", err)
	}
}

func TestRunTwice(t *testing.T) {
	s, err := scrape.New(scrape.Options{Dialect: scrape.DialectNone})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Run(ctx); err != nil {
		t.Errorf("first Run: %v", err)
	}
	if err := s.Run(ctx); err == nil {
		t.Error("second Run returned nil")
	}
}

func equalSlices(a, b []load.Rank) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOnChangeAfterEveryScrape: OnChange follows every scrape, failed
// ones included, after the snapshot is stored.
func TestOnChangeAfterEveryScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{}
		sc.push("/metrics", body(t, "vllm_dp2.txt"))
		var updates []int // FailedScrapes seen by each OnChange
		var s *scrape.Scraper
		s, err := scrape.New(scrape.Options{
			EngineURL: mustURL(t, "http://engine.test:8000"), Dialect: scrape.DialectVLLM,
			Client:   &http.Client{Transport: sc},
			OnChange: func() { updates = append(updates, s.Load().FailedScrapes) },
		})
		if err != nil {
			t.Fatal(err)
		}
		startScraper(t, s)
		synctest.Wait()
		sc.setFailing(true)
		time.Sleep(2 * scrape.DefaultInterval)
		synctest.Wait()
		if want := []int{0, 1, 2}; !slices.Equal(updates, want) {
			t.Errorf("OnChange saw failed scrapes %v, want %v", updates, want)
		}
	})
}

// TestStaticValuesBeforeTheFirstScrape: until the engine reports its
// ranks, whatever the dialect, rank 0 carries the static values, so a
// silent engine still leaves slotgate a block size and a capacity.
func TestStaticValuesBeforeTheFirstScrape(t *testing.T) {
	for _, d := range scrape.Dialects() {
		s := newScraper(t, d, &script{}, scrape.Overrides{BlockSize: 16, KVTotalBlocks: 100}, nil)
		got := s.Load()
		if len(got.Ranks) != 1 || got.Ranks[0].DPRank != 0 ||
			got.Ranks[0].BlockSize != (load.Value{N: 16, Source: load.SourceStatic}) ||
			got.Ranks[0].KVTotalBlocks != (load.Value{N: 100, Source: load.SourceStatic}) {
			t.Errorf("%s: ranks before any scrape = %+v, want rank 0 with the static values", d, got.Ranks)
		}
	}
}
