package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

func outputTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// statusProc is one of slotgate's programs run as a real process for the
// status page test; it is killed when the test ends, and its output shown
// if the test failed.
type statusProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	out    *procOutput
	exited chan struct{} // closed once the process was waited for
}

// startStatusProc runs bin(name) with args in a minimal environment.
func startStatusProc(t *testing.T, name string, args ...string) *statusProc {
	t.Helper()
	cmd := exec.Command(bin(name), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	p := &statusProc{t: t, name: name, cmd: cmd, out: newProcOutput(), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); p.out.close(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, outputTail(p.out.String(), 40))
		}
	})
	return p
}

// kill ends the process at once, as a crash would, and waits for it.
func (p *statusProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// listening waits for the process's JSON "listening" line and decodes it
// into v.
func (p *statusProc) listening(v any) {
	p.t.Helper()
	line, ok := p.out.waitFor(`"msg":"listening"`, 30*time.Second)
	if !ok {
		p.t.Fatalf("%s did not log its listening line; output:\n%s", p.name, outputTail(p.out.String(), 20))
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		p.t.Fatalf("%s listening line %q: %v", p.name, line, err)
	}
}

// procOutput collects a process's output and wakes the waits for a line.
type procOutput struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	change chan struct{} // closed and replaced on every write and at close
	closed bool
}

func newProcOutput() *procOutput { return &procOutput{change: make(chan struct{})} }

func (o *procOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(b)
	close(o.change)
	o.change = make(chan struct{})
	return len(b), nil
}

func (o *procOutput) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	close(o.change)
	o.change = make(chan struct{})
}

func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor returns the first line holding substr, waiting up to limit; ok
// is false when the limit passed or the process ended without it.
func (o *procOutput) waitFor(substr string, limit time.Duration) (line string, ok bool) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		text, change, closed := o.buf.String(), o.change, o.closed
		o.mu.Unlock()
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), substr) {
				return sc.Text(), true
			}
		}
		if closed {
			return "", false
		}
		select {
		case <-change:
		case <-deadline.C:
			return "", false
		}
	}
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
