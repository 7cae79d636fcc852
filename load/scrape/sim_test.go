package scrape_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/scrape"
	"github.com/slotgate/slotgate/sim"
)

// simEngine runs an enginesim engine until the test ends and returns its
// handler for dialect d. reqs requests (17 prompt tokens, many output
// tokens) are submitted before the loops start, so with MaxNumSeqs 2 and
// two ranks each rank has two running, and rank 0 one waiting.
func simEngine(t *testing.T, d sim.Dialect, opts sim.Options, reqs int) (*sim.Engine, http.Handler) {
	t.Helper()
	eng, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sim.NewHandler(sim.ServerOptions{Engine: eng, Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		hd, err := eng.Submit(sim.Request{PromptTokens: 17, MaxTokens: 4000, IgnoreEOS: true, Key: sim.Key(0, uint64(i), nil)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(hd.Close)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return eng, h
}

var simOpts = sim.Options{MaxNumSeqs: 2, DataParallelSize: 2, NumGPUBlocks: 1000, BlockSize: 16, IterationStatsLimit: 1000}

// TestSimDialects scrapes enginesim in each dialect, detected by
// DialectAuto, and checks the ranks against the engine's own Stats. The
// engine runs in a synctest bubble at SpeedupRatio 1e-6, so after its
// first step is planned nothing changes (vLLM, SGLang); TensorRT-LLM's
// stats need finished steps, so it runs at real speed and its used blocks
// may trail Stats by the blocks the next step took.
func TestSimDialects(t *testing.T) {
	for _, tt := range []struct {
		dialect sim.Dialect
		want    scrape.Dialect
		speedup float64
	}{
		{sim.DialectVLLM, scrape.DialectVLLM, 1e-6},
		{sim.DialectSGLang, scrape.DialectSGLang, 1e-6},
		{sim.DialectTRTLLM, scrape.DialectTRTLLM, 1},
	} {
		t.Run(string(tt.dialect), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := simOpts
				o.SpeedupRatio = tt.speedup
				eng, h := simEngine(t, tt.dialect, o, 5)
				s := newScraper(t, scrape.DialectAuto, handlerTransport{h}, scrape.Overrides{}, nil)
				time.Sleep(50 * time.Millisecond) // TensorRT-LLM: a few steps done
				startScraper(t, s)
				synctest.Wait()
				got := s.Load()
				if got.Dialect != tt.want || got.Stale || got.FailedScrapes != 0 {
					t.Fatalf("snapshot %+v, want dialect %s, fresh", got, tt.want)
				}
				checkSim(t, tt.want, got.Ranks, eng.Stats())
			})
		})
	}
}

func checkSim(t *testing.T, d scrape.Dialect, got []load.Rank, st sim.Stats) {
	t.Helper()
	checkSane(t, got)
	if len(got) != len(st.Ranks) {
		t.Fatalf("got %d ranks, engine has %d", len(got), len(st.Ranks))
	}
	for i, rs := range st.Ranks {
		r := got[i]
		if rs.Running != 2 || rs.Waiting != 1-i {
			t.Fatalf("engine rank %d: running %d, waiting %d; the test wants 2 and %d", i, rs.Running, rs.Waiting, 1-i)
		}
		total := int64(rs.UsableBlocks) // SGLang and TensorRT-LLM report the usable pool
		if d == scrape.DialectVLLM {
			total = int64(rs.NumGPUBlocks) // Dynamo's total counts vLLM's null block
		}
		want := load.Rank{
			DPRank: rs.Rank, KVTotalBlocks: e(total), KVUsedBlocks: e(int64(rs.UsedBlocks)),
			NumRequestsRunning: e(int64(rs.Running)), NumRequestsWaiting: e(int64(rs.Waiting)), BlockSize: e(int64(rs.BlockSize)),
		}
		switch d {
		case scrape.DialectSGLang:
			want.ActivePrefillTokens = e(int64(rs.WaitingTokens))
		case scrape.DialectTRTLLM:
			want.MaxNumBatchedTokens = e(int64(rs.MaxNumBatchedTokens))
			want.ActivePrefillTokens = r.ActivePrefillTokens // depends on the step; checked below
			if u := r.KVUsedBlocks.N; u <= int64(rs.UsedBlocks) && u >= int64(rs.UsedBlocks-rs.Running) {
				want.KVUsedBlocks = r.KVUsedBlocks
			}
			if !r.ActivePrefillTokens.Known() {
				t.Errorf("rank %d: prefill tokens unknown", i)
			}
		}
		if r != want {
			t.Errorf("rank %d:\n got  %+v\n want %+v (engine %+v)", i, r, want, rs)
		}
	}
}

// TestSimVLLMOverHTTP parses enginesim's /metrics fetched over a real
// connection, num_gpu_blocks divided by the two ranks seen.
func TestSimVLLMOverHTTP(t *testing.T) {
	o := simOpts
	o.SpeedupRatio = 1e-6
	eng, h := simEngine(t, sim.DialectVLLM, o, 5)
	srv := httptest.NewServer(h)
	defer srv.Close()
	deadline := time.Now().Add(10 * time.Second)
	for st := eng.Stats(); st.Ranks[0].Running+st.Ranks[1].Running < 4; st = eng.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("engine never ran the requests: %+v", st)
		}
		time.Sleep(time.Millisecond) // real time: the engine's first step is planned at once
	}
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := scrape.ParseVLLM(resp.Body, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkSim(t, scrape.DialectVLLM, got, eng.Stats())
}
