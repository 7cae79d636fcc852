package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/slotgate/slotgate/internal/testlog"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startEnginesim runs enginesim on a free loopback port and returns its
// base URL once it listens.
func startEnginesim(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "enginesim"), append([]string{"--listen", "127.0.0.1:0", "--log-level", "info"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	logs := testlog.New()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start enginesim: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logs.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("enginesim output:\n%s", logs.String())
		}
	})
	line := logs.WaitFor(t, `"msg":"listening"`, waitLimit)
	var l struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Addr == "" {
		t.Fatalf("enginesim listening line %q: %v", line, err)
	}
	return "http://" + l.Addr
}

// loadEvent is what the test reads of each published snapshot.
type loadEvent struct {
	Seq    uint64 `json:"seq"`
	Busy   bool   `json:"busy"`
	Stale  bool   `json:"stale"`
	Engine struct {
		Dialect string `json:"dialect"`
	} `json:"engine"`
	Ranks []struct {
		KVUsedBlocks       *int64            `json:"kv_used_blocks"`
		ActiveDecodeBlocks *int64            `json:"active_decode_blocks"`
		Sources            map[string]string `json:"sources"`
	} `json:"ranks"`
}

// loadStream follows a sidecar's /v1/load/stream until the test ends.
type loadStream struct {
	mu     sync.Mutex
	events []loadEvent
	err    error
}

func watchLoad(t *testing.T, admin string) *loadStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/v1/load/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/load/stream: %v", err)
	}
	ls := &loadStream{}
	var wg sync.WaitGroup
	wg.Go(func() { ls.read(resp) })
	t.Cleanup(func() { cancel(); resp.Body.Close(); wg.Wait() })
	return ls
}

func (ls *loadStream) read(resp *http.Response) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev loadEvent
		err := json.Unmarshal([]byte(data), &ev)
		ls.mu.Lock()
		if err != nil && ls.err == nil {
			ls.err = fmt.Errorf("event %q: %w", data, err)
		}
		ls.events = append(ls.events, ev)
		ls.mu.Unlock()
	}
}

func (ls *loadStream) snapshot() ([]loadEvent, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]loadEvent(nil), ls.events...), ls.err
}

// TestBusyFlipsUnderBurst is the load issue end to end: enginesim with a
// small KV cache, slotgate scraping it every 50 ms with a decode threshold
// and --reject-when-busy, and a load-generator burst. The published load
// turns busy during the burst, from the engine's own KV figures, slotgate
// refuses with reason busy meanwhile, and the worker is free again once the
// burst is over. The stream never goes silent: heartbeats keep coming.
func TestBusyFlipsUnderBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a three-second burst; skipped with -short")
	}
	engine := startEnginesim(t, "--num-gpu-blocks", "400", "--block-size", "16", "--max-model-len", "2048",
		"--max-num-seqs", "16", "--speedup-ratio", "4")
	s := start(t, engine, nil, "--engine-request-limit", "16", "--request-queue-limit", "16",
		"--engine-metrics-interval", "50ms", "--active-decode-blocks-threshold", "0.3", "--reject-when-busy")
	stream := watchLoad(t, s.admin)
	eventually(t, "the engine's dialect detected", func() bool {
		evs, _ := stream.snapshot()
		return len(evs) > 0 && evs[len(evs)-1].Engine.Dialect == "vllm"
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	lg := exec.CommandContext(ctx, filepath.Join(binDir, "slotgate-loadgen"), "--url", s.proxy,
		"--concurrency", "16", "--duration", "3s", "--prompt-tokens", "600", "--max-tokens", "40",
		"--json", "-", "--progress-interval", "0")
	out, err := lg.Output()
	if err != nil {
		t.Fatalf("slotgate-loadgen: %v\n%s", err, out)
	}
	eventually(t, "the worker free again after the burst", func() bool {
		evs, _ := stream.snapshot()
		return len(evs) > 0 && !evs[len(evs)-1].Busy
	})
	evs, err := stream.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	checkBusyEvents(t, evs)
	if n := s.metric("slotgate_requests_total", "outcome", "rejected_busy"); n <= 0 {
		t.Errorf("rejected_busy = %v, want some refusals while busy", n)
	}
	var summary struct {
		ByStatus map[string]int `json:"by_status"`
	}
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatalf("loadgen JSON: %v\n%s", err, out)
	}
	if summary.ByStatus["200"] == 0 || summary.ByStatus["529"] == 0 {
		t.Errorf("loadgen statuses %v, want some 200 and some 529 (busy)", summary.ByStatus)
	}
	// Heartbeats: the stream keeps publishing while nothing changes.
	before := evs[len(evs)-1].Seq
	time.Sleep(1500 * time.Millisecond)
	evs, _ = stream.snapshot()
	if last := evs[len(evs)-1].Seq; last <= before {
		t.Errorf("no snapshot in 1.5 s of quiet (Seq %d then %d): heartbeats missing", before, last)
	}
}

// checkBusyEvents checks the published sequence: Seq strictly increasing,
// busy seen while the engine's KV blocks were the signal, and free last.
func checkBusyEvents(t *testing.T, evs []loadEvent) {
	t.Helper()
	busy := 0
	for i, ev := range evs {
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Errorf("Seq went from %d to %d", evs[i-1].Seq, ev.Seq)
		}
		if ev.Busy {
			busy++
			if len(ev.Ranks) != 1 || ev.Ranks[0].KVUsedBlocks == nil || ev.Ranks[0].Sources["kv_used_blocks"] != "engine" {
				t.Errorf("busy snapshot %d without the engine's KV figure: %+v", ev.Seq, ev)
			}
		}
	}
	if busy == 0 {
		t.Errorf("never busy in %d snapshots of the burst", len(evs))
	}
	if evs[len(evs)-1].Busy {
		t.Error("still busy after the burst")
	}
}

// TestOwnLoadWhenEngineSilent: an engine without load metrics makes the
// snapshot stale, while slotgate's own counts of its requests keep
// flowing (prefill and decode blocks from the static block size), reach
// the busy rule, the ORCA header and the per-rank gauges; and a threshold
// set through /busy_threshold takes effect at once.
func TestOwnLoadWhenEngineSilent(t *testing.T) {
	e := newEngine(t)
	s := start(t, e.url(), nil, "--engine-request-limit", "4", "--engine-metrics-interval", "20ms",
		"--block-size", "16", "--kv-total-blocks", "100", "--orca-header", "--reject-when-busy")
	var snap loadEvent
	eventually(t, "the engine's metrics stale", func() bool {
		_, body := get(t, s.admin+"/v1/load")
		return json.Unmarshal([]byte(body), &snap) == nil && snap.Stale
	})
	e.hold()
	prompt := `{"model":"m","prompt":"` + strings.Repeat("abcd", 400) + `"}` // 1600 bytes: 400 tokens, 25 blocks
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	done := make(chan result, 2)
	for i := range 2 {
		go func() { done <- post(ctx, http.DefaultClient, s.proxy, fmt.Sprintf("held-%d", i), prompt) }()
	}
	e.waitInFlight(t, 2)
	eventually(t, "slotgate's own load of two held requests", func() bool {
		return s.metric("slotgate_worker_active_prefill_tokens", "dp_rank", "0") == 800 &&
			s.metric("slotgate_worker_active_decode_blocks", "dp_rank", "0") == 50
	})
	if s.metric("slotgate_worker_kv_used_blocks", "dp_rank", "0") != -1 {
		t.Error("kv_used_blocks has a series though the engine never said it")
	}
	// 50 of 100 blocks: busy above 0.4, refused with reason busy.
	status, body := postJSON(t, s.admin+"/busy_threshold", `{"model":"m","active_decode_blocks_threshold":0.4}`)
	if status != http.StatusOK || !strings.Contains(body, `"active_decode_blocks_threshold":0.4`) {
		t.Fatalf("POST /busy_threshold: %d %s", status, body)
	}
	eventually(t, "busy", func() bool { return s.metric("slotgate_worker_busy", "dp_rank", "0") == 1 })
	r := post(ctx, http.DefaultClient, s.proxy, "refused", prompt)
	if r.status != 529 || r.header.Get("X-Slotgate-Reason") != "busy" {
		t.Errorf("while busy: %d %q %s", r.status, r.header.Get("X-Slotgate-Reason"), r.body)
	}
	e.release()
	for range 2 {
		if r := <-done; r.status != http.StatusOK {
			t.Fatalf("held request: %d %v %s", r.status, r.err, r.body)
		}
	}
	eventually(t, "free again", func() bool { return s.metric("slotgate_worker_busy", "dp_rank", "0") == 0 })
	r = post(ctx, http.DefaultClient, s.proxy, "after", prompt)
	orca := r.header.Get("Endpoint-Load-Metrics")
	if r.status != http.StatusOK || !strings.HasPrefix(orca, "TEXT ") || !strings.Contains(orca, "named_metrics.busy=0") {
		t.Errorf("after: %d, ORCA header %q", r.status, orca)
	}
}

// postJSON posts body to url and returns status and answer.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
