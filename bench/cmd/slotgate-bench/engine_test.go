package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// startTestEngine serves the engine stand-in in the test's process and
// returns the driver's handle on it.
func startTestEngine(t *testing.T) *engineProc {
	t.Helper()
	srv := httptest.NewServer(newEngine().handler())
	t.Cleanup(srv.Close)
	return &engineProc{addr: strings.TrimPrefix(srv.URL, "http://"), c: srv.Client()}
}

func TestEngineCountsAndResets(t *testing.T) {
	ctx := context.Background()
	eng := startTestEngine(t)
	c := &http.Client{}
	for _, path := range []string{"/fast", "/work?ms=1", "/health", "/_stats", "/nope"} {
		if _, err := post(ctx, c, "http://"+eng.addr+path); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	st, err := eng.stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Only /fast and /work are engine work; health, stats and unknown
	// paths are not counted.
	if st.Received != 2 || st.MaxInFlight != 1 || st.InFlight != 0 {
		t.Errorf("stats = %+v, want 2 received, max 1, none in flight", st)
	}
	if err := eng.reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := eng.stats(ctx); st.Received != 0 || st.MaxInFlight != 0 {
		t.Errorf("after reset: %+v, want zeroes", st)
	}
	if err := eng.reset(ctx, -1); err == nil {
		t.Error("reset with -1 slots: want an error")
	}
}

func TestEngineSlotsHoldRequests(t *testing.T) {
	ctx := context.Background()
	eng := startTestEngine(t)
	if err := eng.reset(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Two requests of 40 ms, one slot: they are served one after the
	// other, so the later one takes at least 80 ms.
	lat := make(chan time.Duration, 2)
	for range 2 {
		go func() {
			t0 := time.Now()
			if _, err := post(ctx, &http.Client{}, "http://"+eng.addr+"/work?ms=40"); err != nil {
				t.Error(err)
			}
			lat <- time.Since(t0)
		}()
	}
	if a, b := <-lat, <-lat; max(a, b) < 80*time.Millisecond {
		t.Errorf("latencies %v and %v: want the second request to wait for the one slot", a, b)
	}
	if st, _ := eng.stats(ctx); st.MaxInFlight != 2 {
		t.Errorf("max in flight %d, want 2 (counted on arrival, before the slot)", st.MaxInFlight)
	}
}

func TestReadStream(t *testing.T) {
	eng := startTestEngine(t)
	ttft, gaps, err := readStream(context.Background(), &http.Client{}, "http://"+eng.addr+"/sse")
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != sseChunks-1 {
		t.Fatalf("%d gaps, want %d", len(gaps), sseChunks-1)
	}
	if ttft <= 0 {
		t.Errorf("TTFT %v, want a positive time", ttft)
	}
	// The median, not every gap: a test machine that stalls the reader
	// can bunch two chunks, but not most of them.
	slices.Sort(gaps)
	if g := gaps[len(gaps)/2]; g < sseGap/2 {
		t.Errorf("median gap %v, want about %v (chunks flushed one by one): %v", g, sseGap, gaps)
	}
	if _, _, err := readStream(context.Background(), &http.Client{}, "http://"+eng.addr+"/fast"); err == nil {
		t.Error("readStream of a non-stream: want an error")
	}
}

func TestOpenRequestsReachTheEngine(t *testing.T) {
	ctx := context.Background()
	eng := startTestEngine(t)
	conns, err := openRequests(ctx, eng.addr, "/work?ms=5000", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(conns)
	got := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		st, err := eng.stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got = int(st.InFlight); got == 5 {
			break
		}
	}
	if got != 5 {
		t.Fatalf("%d requests in flight at the engine, want 5", got)
	}
	closeAll(conns)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, _ := eng.stats(ctx); st.InFlight == 0 {
			return
		}
	}
	t.Error("closing the connections did not end the engine's requests")
}
