package interop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The status page test's setting: N slots, W before the first token and
// Q queue places, filled by streams that never end.
const (
	pageSlots, pageWaiting, pageQueue = 4, 3, 2
	pageBrowserLimit                  = 60 * time.Second
	pageWait                          = 20 * time.Second
	// pagePollSettle is longer than the page's poll of /metrics (1 s).
	pagePollSettle = 1500 * time.Millisecond
)

// TestStatusPage opens the admin port's status page in a real headless
// Chromium while slotgate is full, checks its figures against GET
// /v1/load, kills slotgate and checks that the page says so and keeps the
// last figures, then restarts slotgate on the same admin port and checks
// that the page reconnects by itself.
func TestStatusPage(t *testing.T) {
	chromium := findChromium(t)
	engineURL := startPageEngine(t)
	sg := startPageSlotgate(t, engineURL, "127.0.0.1:0")
	tab := newBrowser(t, chromium, pageBrowserLimit)

	if err := chromedp.Do(tab, chromedp.Navigate(sg.admin+"/")); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	waitPageState(t, tab, "connected")

	servePageRequests(t, sg.proxy, 8) // times to first byte for the page
	setPageNeverEnd(t, engineURL)
	load := holdPageLoad(t, sg)
	load.refuse(sg.proxy)
	comparePage(t, tab, sg.admin)
	checkPageTraffic(t, tab, sg.admin)
	pageScreenshot(t, tab)

	before := readPage(t, tab)
	sg.kill()
	waitPageState(t, tab, "disconnected")
	checkPageDisconnected(t, tab, before)
	load.stop()

	// SO_REUSEADDR, which Go sets on Linux listeners, lets the admin port
	// be bound again at once despite the killed process's connections.
	sg = startPageSlotgate(t, engineURL, strings.TrimPrefix(sg.admin, "http://"))
	waitPageState(t, tab, "connected")
	comparePage(t, tab, sg.admin)
}

// pageSidecar is a running slotgate and its base URLs.
type pageSidecar struct {
	*proc
	proxy, admin string
}

// startPageEngine runs enginesim with a KV cache small enough for the
// test's streams to fill a visible part of it.
func startPageEngine(t *testing.T) string {
	t.Helper()
	p := startProc(t, "enginesim", nil, "--listen", "127.0.0.1:0", "--num-gpu-blocks", "2048")
	var line struct{ Addr string }
	p.listening(&line)
	return "http://" + line.Addr
}

func startPageSlotgate(t *testing.T, engineURL, adminAddr string) pageSidecar {
	t.Helper()
	p := startProc(t, "slotgate", nil, "--listen", "127.0.0.1:0", "--admin-listen", adminAddr,
		"--admin-grpc-listen", "off", "--engine-url", engineURL,
		"--engine-request-limit", strconv.Itoa(pageSlots), "--engine-request-waiting-limit", strconv.Itoa(pageWaiting),
		"--request-queue-limit", strconv.Itoa(pageQueue),
		"--active-decode-blocks-threshold", "0.85", "--active-prefill-tokens-threshold", "4096")
	var line struct{ Proxy, Admin string }
	p.listening(&line)
	return pageSidecar{proc: p, proxy: "http://" + line.Proxy, admin: "http://" + line.Admin}
}

// pageLoadView is what the test reads of GET /v1/load.
type pageLoadView struct {
	Seq    uint64 `json:"seq"`
	Busy   bool   `json:"busy"`
	Stale  bool   `json:"stale"`
	Engine struct {
		Dialect string `json:"dialect"`
	} `json:"engine"`
	Requests struct {
		InFlight     int64 `json:"in_flight"`
		Queued       int64 `json:"queued"`
		Limit        int64 `json:"limit"`
		QueueLimit   int64 `json:"queue_limit"`
		WaitingLimit int64 `json:"waiting_limit"`
		Prefilling   int64 `json:"prefilling"`
	} `json:"requests"`
	Thresholds struct {
		ActiveDecodeBlocks *float64 `json:"active_decode_blocks_threshold"`
	} `json:"thresholds"`
	Ranks []struct {
		KVTotalBlocks *int64 `json:"kv_total_blocks"`
		KVUsedBlocks  *int64 `json:"kv_used_blocks"`
	} `json:"ranks"`
}

func getPageLoad(t *testing.T, admin string) pageLoadView {
	t.Helper()
	resp, err := http.Get(admin + "/v1/load")
	if err != nil {
		t.Fatalf("GET /v1/load: %v", err)
	}
	defer resp.Body.Close()
	var v pageLoadView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET /v1/load: %v", err)
	}
	return v
}

// waitPageLoad waits until GET /v1/load satisfies ok.
func waitPageLoad(t *testing.T, admin string, ok func(pageLoadView) bool) {
	t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		v := getPageLoad(t, admin)
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load did not reach the expected state within %s: %+v", pageWait, v.Requests)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pageFiguresJS collects the page's figures: every element with an id and
// a data-field by id (its text, and its data-value under id+"@"), rank
// 0's KV row under "rank0.", and how the page looks while disconnected.
const pageFiguresJS = `(() => {
  const out = {"conn-state": document.getElementById("conn").dataset.state, body: document.body.dataset.state};
  for (const el of document.querySelectorAll("[data-field][id]")) {
    out[el.id] = el.textContent;
    if (el.dataset.value !== undefined) out[el.id + "@"] = el.dataset.value;
  }
  const rank0 = document.querySelector('#kv-ranks-body tr[data-rank="0"]');
  if (rank0) for (const el of rank0.querySelectorAll("[data-field]")) out["rank0." + el.dataset.field] = el.textContent;
  const cap = document.querySelector('#rejections-body tr[data-reason="rejected_capacity"]');
  if (cap) out["capacity-count"] = cap.querySelector('[data-field="reject-count"]').textContent;
  out.filter = getComputedStyle(document.querySelector("main")).filter;
  out.banner = getComputedStyle(document.getElementById("banner")).display;
  return out;
})()`

func readPage(t *testing.T, tab context.Context) map[string]string {
	t.Helper()
	figures, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](pageFiguresJS))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return figures
}

func waitPageState(t *testing.T, tab context.Context, state string) {
	t.Helper()
	expr := fmt.Sprintf(`document.getElementById("conn").dataset.state === %q`, state)
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pageWait))); err != nil {
		t.Fatalf("the page did not show %q within %s: %v; it shows %v", state, pageWait, err, readPage(t, tab))
	}
}

// pageCounts are the page's counts and the snapshot fields they show.
var pageCounts = []struct {
	id string
	of func(*pageLoadView) *int64
}{
	{"seq", func(v *pageLoadView) *int64 { n := int64(v.Seq); return &n }},
	{"slots-in-use", func(v *pageLoadView) *int64 { return &v.Requests.InFlight }},
	{"slots-limit", func(v *pageLoadView) *int64 { return &v.Requests.Limit }},
	{"prefilling", func(v *pageLoadView) *int64 { return &v.Requests.Prefilling }},
	{"waiting-limit", func(v *pageLoadView) *int64 { return &v.Requests.WaitingLimit }},
	{"queued", func(v *pageLoadView) *int64 { return &v.Requests.Queued }},
	{"queue-limit", func(v *pageLoadView) *int64 { return &v.Requests.QueueLimit }},
	{"rank0.kv-used", func(v *pageLoadView) *int64 { return v.Ranks[0].KVUsedBlocks }},
	{"rank0.kv-total", func(v *pageLoadView) *int64 { return v.Ranks[0].KVTotalBlocks }},
}

// pageLabels are the page's states, by their data-value.
var pageLabels = []struct {
	id string
	of func(*pageLoadView) string
}{
	{"dialect@", func(v *pageLoadView) string { return v.Engine.Dialect }},
	{"worker-busy@", func(v *pageLoadView) string { return strconv.FormatBool(v.Busy) }},
	{"engine-stale@", func(v *pageLoadView) string { return strconv.FormatBool(v.Stale) }},
	{"threshold-decode-blocks@", func(v *pageLoadView) string {
		return strconv.FormatFloat(*v.Thresholds.ActiveDecodeBlocks, 'g', -1, 64)
	}},
}

// comparePage checks the page's figures against GET /v1/load read just
// before and just after them: each must lie between the two (a count) or
// equal one of them (a state). The page may trail the stream by an event,
// so it is read again until it agrees or pageWait passes.
func comparePage(t *testing.T, tab context.Context, admin string) {
	t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		before := getPageLoad(t, admin)
		page := readPage(t, tab)
		after := getPageLoad(t, admin)
		problems := pageMismatches(&before, page, &after)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page disagrees with GET /v1/load after %s:\n%s", pageWait, strings.Join(problems, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func pageMismatches(before *pageLoadView, page map[string]string, after *pageLoadView) []string {
	var problems []string
	if len(before.Ranks) == 0 || len(after.Ranks) == 0 {
		return []string{"GET /v1/load has no ranks"}
	}
	for _, f := range pageCounts {
		a, b, got := f.of(before), f.of(after), page[f.id]
		if a == nil || b == nil {
			if got != "–" {
				problems = append(problems, fmt.Sprintf("%s: page %q, want – (unknown)", f.id, got))
			}
			continue
		}
		n, err := strconv.ParseInt(got, 10, 64)
		if err != nil || n < min(*a, *b) || n > max(*a, *b) {
			problems = append(problems, fmt.Sprintf("%s: page %q, want %d..%d", f.id, got, min(*a, *b), max(*a, *b)))
		}
	}
	for _, f := range pageLabels {
		if got := page[f.id]; got != f.of(before) && got != f.of(after) {
			problems = append(problems, fmt.Sprintf("%s: page %q, want %q or %q", f.id, got, f.of(before), f.of(after)))
		}
	}
	return problems
}

// checkPageTraffic waits for the page's figures from /metrics: a refusal rate
// and a time to first byte, and the count of capacity refusals between
// two reads of /metrics.
func checkPageTraffic(t *testing.T, tab context.Context, admin string) {
	t.Helper()
	expr := `parseFloat(document.getElementById("reject-rate-total").dataset.value) > 0 &&
		document.getElementById("ttfb-p50").dataset.value !== "" &&
		document.querySelector('#rejections-body tr[data-reason="rejected_capacity"]') !== null`
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pageWait))); err != nil {
		t.Fatalf("the page shows no refusal rate or time to first byte within %s: %v; it shows %v", pageWait, err, readPage(t, tab))
	}
	deadline := time.Now().Add(pageWait)
	for {
		// The page reads /metrics once a second, so its count is up to a
		// second old: it must lie between a count read longer ago than
		// that and one read after it.
		lo := pageRequestsTotal(t, admin, "rejected_capacity")
		time.Sleep(pagePollSettle)
		page := readPage(t, tab)
		hi := pageRequestsTotal(t, admin, "rejected_capacity")
		n, err := strconv.ParseFloat(page["capacity-count"], 64)
		if err == nil && lo <= n && n <= hi {
			t.Logf("page: refused %s/s, served %s/s, time to first byte p50 %s, p99 %s",
				page["reject-rate-total"], page["served-rate"], page["ttfb-p50"], page["ttfb-p99"])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page counts %q capacity refusals, /metrics %v..%v", page["capacity-count"], lo, hi)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pageRequestsTotal sums slotgate_requests_total{outcome} over its other
// labels, read from the text format by hand: the page parses it the same
// way, and this module does not depend on Prometheus's parser.
func pageRequestsTotal(t *testing.T, admin, outcome string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "slotgate_requests_total{") || !strings.Contains(line, `outcome="`+outcome+`"`) {
			continue
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// checkPageDisconnected checks that the page says it lost slotgate, greys its
// figures and keeps those it showed last: the same ones a poll later.
func checkPageDisconnected(t *testing.T, tab context.Context, before map[string]string) {
	t.Helper()
	page := readPage(t, tab)
	if page["body"] != "disconnected" || page["banner"] == "none" {
		t.Errorf("disconnected page: state %q, banner display %q; want the disconnected banner", page["body"], page["banner"])
	}
	if !strings.Contains(page["filter"], "grayscale") {
		t.Errorf("disconnected page: figures not greyed (filter %q)", page["filter"])
	}
	// slotgate publishes a snapshot every second and whenever the load
	// moves (the never-ending streams fill KV blocks), so one may reach
	// the page after before was read and before the kill landed: the last
	// snapshot shown is then a later one, never an earlier one, and never
	// a blank. Its figures are before's only when it is before's snapshot.
	seqBefore, err1 := strconv.Atoi(before["seq"])
	seqNow, err2 := strconv.Atoi(page["seq"])
	if err1 != nil || err2 != nil || seqNow < seqBefore {
		t.Errorf("disconnected page: seq shows %q, want the last snapshot's, %q or later", page["seq"], before["seq"])
	}
	for _, f := range pageCounts {
		if _, err := strconv.ParseInt(page[f.id], 10, 64); err != nil {
			t.Errorf("disconnected page: %s shows %q, want the last figure received", f.id, page[f.id])
		} else if seqNow == seqBefore && page[f.id] != before[f.id] {
			t.Errorf("disconnected page: %s shows %q in snapshot %d, want its figure %q", f.id, page[f.id], seqNow, before[f.id])
		}
	}
	if page["slots-in-use"] != strconv.Itoa(pageSlots) {
		t.Errorf("disconnected page: slots in use %q, want the last figure %d", page["slots-in-use"], pageSlots)
	}
	time.Sleep(pagePollSettle)
	later := readPage(t, tab)
	for _, f := range pageCounts {
		if later[f.id] != page[f.id] {
			t.Errorf("disconnected page: %s went from %q to %q with slotgate gone", f.id, page[f.id], later[f.id])
		}
	}
}

// pageScreenshot captures the page under load, written to
// $SLOTGATE_STATUS_SCREENSHOT when it is set (the README's picture).
func pageScreenshot(t *testing.T, tab context.Context) {
	t.Helper()
	path := os.Getenv("SLOTGATE_STATUS_SCREENSHOT")
	if path != "" {
		// For the README, a picture with a full rate window of refusals
		// (ten a second for five seconds); the test itself needs none.
		full := `parseInt(document.querySelector('#rejections-body tr[data-reason="rejected_capacity"] [data-field="reject-count"]').textContent) >= 60`
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](full, chromedp.WithPollingTimeout(pageWait))); err != nil {
			t.Fatalf("wait for a full rate window before the screenshot: %v", err)
		}
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %d bytes that are not a PNG", len(png))
	}
	if path == "" {
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write the screenshot: %v", err)
	}
	t.Logf("screenshot of the page under load: %s", path)
}
