package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// retryHints runs clients streamed completions of tokens tokens each
// through the slotgate at url, in closed loops, for d, and returns the
// Retry-After of every 529 answered in the second half, when the release
// rate has been measured for a while.
func retryHints(t *testing.T, url string, clients, tokens int, d time.Duration) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	half := time.Now().Add(d / 2)
	body := fmt.Sprintf(`{"prompt":"hello","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
	var mu sync.Mutex
	var hints []int
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
				if err != nil {
					return
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue // the run's end cut it
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 529 {
					continue
				}
				if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && time.Now().After(half) {
					mu.Lock()
					hints = append(hints, n)
					mu.Unlock()
				}
				// Refused: come back soon, not after the hint, to see
				// many hints.
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	return hints
}

// TestRetryAfterFollowsThePace: with --retry-after auto, the hint of a 529
// is the time the queue ahead takes at the rate slots are released: an
// engine ten times slower gives hints several times longer, each within
// 1 s to 60 s. The same burst (8 clients against N=2, Q=4) runs against a
// fast and a slow enginesim.
func TestRetryAfterFollowsThePace(t *testing.T) {
	t.Parallel()
	median := map[string]int{}
	var mu sync.Mutex
	t.Run("engines", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			speedup string
		}{{"fast", "1"}, {"slow", "0.1"}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				_, line := runEnginesim(t, "pace "+tc.name, "--listen", "127.0.0.1:0", "--speedup-ratio", tc.speedup)
				var eng struct{ Addr string }
				if err := json.Unmarshal([]byte(line), &eng); err != nil {
					t.Fatal(err)
				}
				sg := start(t, "http://"+eng.Addr, nil, "--engine-request-limit", "2", "--request-queue-limit", "4",
					"--retry-after", "auto")
				hints := retryHints(t, sg.proxy, 8, 50, 8*time.Second)
				if len(hints) < 5 {
					t.Fatalf("%d refusals with a hint in the second half, want at least 5", len(hints))
				}
				slices.Sort(hints)
				if hints[0] < 1 || hints[len(hints)-1] > 60 {
					t.Errorf("hints %v, want each within 1..60", hints)
				}
				mu.Lock()
				median[tc.name] = hints[len(hints)/2]
				mu.Unlock()
				t.Logf("%s engine: %d hints, median %d s, from %d to %d", tc.name, len(hints), hints[len(hints)/2], hints[0], hints[len(hints)-1])
			})
		}
	})
	if t.Failed() {
		return
	}
	// Fast: about 0.35 s a request, 2 slots, so 5 places ahead clear in
	// about 1 s. Slow: ten times that.
	if median["slow"] < 3 || median["slow"] < 3*median["fast"] {
		t.Errorf("median hints: fast %d s, slow %d s; want the slow engine's at least 3 s and 3 times the fast one's",
			median["fast"], median["slow"])
	}
}
