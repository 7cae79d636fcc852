package interop_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumInstallLimit bounds the apt-get install of Chromium; a slow
// mirror must fail the test, not hang it.
const chromiumInstallLimit = 5 * time.Minute

// chromiumNames are the browsers the status page test can drive, by the
// names Debian, Ubuntu and Google give them.
var chromiumNames = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findChromium returns the path of a Chromium. When there is none and the
// test runs as root where apt-get is, it installs Debian's chromium;
// otherwise the test is skipped with how to install one.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := lookChromium(); p != "" {
		return p
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		t.Skip("no Chromium found (looked for " + strings.Join(chromiumNames, ", ") +
			"): install one, e.g. `sudo apt-get install chromium` on Debian, to run the status page's browser test")
	}
	ctx, cancel := context.WithTimeout(t.Context(), chromiumInstallLimit)
	defer cancel()
	t.Logf("no Chromium found: installing Debian's chromium with apt-get (at most %s)", chromiumInstallLimit)
	install := exec.CommandContext(ctx, "sh", "-c", "apt-get update -qq && apt-get install -y -qq chromium")
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("apt-get install chromium: %v\n%s", err, outputTail(string(out), 20))
	}
	p := lookChromium()
	if p == "" {
		t.Fatal("apt-get installed chromium, but no Chromium is on the PATH")
	}
	return p
}

func lookChromium() string {
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and returns
// a tab's context, bounded by limit. Chromium ends with the test.
// The flags keep it off the network (no component updates, sync, QUIC
// probes or first-run pages) and let it run as root in a container
// (no sandbox, no GPU).
func newBrowser(t *testing.T, chromium string, limit time.Duration) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	ctx, cancelTimeout := context.WithTimeout(t.Context(), limit)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancelTimeout() })
	// The first action starts the browser; fail here, with the cause,
	// rather than at the first page action.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start Chromium (%s): %v", chromium, err)
	}
	return tab
}

// pageChatBody is a chat completion whose answer is max tokens long.
func pageChatBody(stream bool, max int) string {
	return fmt.Sprintf(`{"model":"sim-model","messages":[{"role":"user","content":"status page"}],`+
		`"stream":%t,"max_tokens":%d,"ignore_eos":true}`, stream, max)
}

func postPageChat(ctx context.Context, proxy, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// servePageRequests sends n short requests, one after another, each answered.
func servePageRequests(t *testing.T, proxy string, n int) {
	t.Helper()
	for range n {
		resp, err := postPageChat(t.Context(), proxy, pageChatBody(false, 8))
		if err != nil {
			t.Fatalf("short request: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("short request: status %d", resp.StatusCode)
		}
	}
}

// setPageNeverEnd makes every later answer of enginesim never end until its
// client leaves: a stream sends its tokens, then keep-alive comments.
func setPageNeverEnd(t *testing.T, engineURL string) {
	t.Helper()
	body := `{"reset_rate":0,"error_rate":0,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":1}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, engineURL+"/enginesim/faults", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT /enginesim/faults: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT /enginesim/faults: status %d", resp.StatusCode)
	}
}

// pageLoad owns the requests that keep slotgate full: streams that
// never end, and a trickle of requests that are refused.
type pageLoad struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// holdPageLoad fills slotgate's slots, then its queue, with long streams
// that keep their places until stop. The queue is filled only once every
// slot is taken: W lets fewer than N in at once, so N+Q streams sent
// together would find the queue full and one would be refused.
func holdPageLoad(t *testing.T, sg pageSidecar) *pageLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	h := &pageLoad{ctx: ctx, cancel: cancel}
	t.Cleanup(h.stop)
	h.streams(sg.proxy, pageSlots)
	waitPageLoad(t, sg.admin, func(v pageLoadView) bool { return v.Requests.InFlight == pageSlots })
	h.streams(sg.proxy, pageQueue)
	waitPageLoad(t, sg.admin, func(v pageLoadView) bool {
		return v.Requests.InFlight == pageSlots && v.Requests.Queued == pageQueue
	})
	return h
}

// streams sends n streams of 3000 tokens each, read until stop.
func (h *pageLoad) streams(proxy string, n int) {
	for range n {
		h.wg.Go(func() {
			if resp, err := postPageChat(h.ctx, proxy, pageChatBody(true, 3000)); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // until ctx ends it
				resp.Body.Close()
			}
		})
	}
}

// refuse sends ten requests a second beyond the full slots and queue,
// until stop; each is refused at once. Call it once the streams hold
// every place, or one of these would take a queue place and wait.
func (h *pageLoad) refuse(proxy string) {
	h.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
			if resp, err := postPageChat(ctx, proxy, pageChatBody(false, 8)); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
	})
}

// stop cancels every request and waits for their goroutines.
func (h *pageLoad) stop() {
	h.cancel()
	h.wg.Wait()
}
