package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
	"github.com/slotgate/slotgate/loadgen"
)

// stopGrace is how long a process has to end after SIGTERM before it is
// killed.
const stopGrace = 10 * time.Second

// run starts the three processes, drives the burst, prints the summary and
// stops everything it started, whatever happens.
func run(ctx context.Context, o options, out io.Writer) error {
	logDir, err := os.MkdirTemp("", "slotgate-demo-")
	if err != nil {
		return fmt.Errorf("log folder: %w", err)
	}
	procs := childproc.NewGroup(logDir, stopGrace)
	defer func() {
		procs.StopAll()
		fmt.Fprintf(out, "\nEvery process stopped. Logs: %s\n", logDir)
	}()
	start := func(name string, args ...string) (map[string]any, error) {
		p, err := procs.Start(name, filepath.Join(o.bin, name), args...)
		if err != nil {
			return nil, err
		}
		return p.Listening(ctx)
	}
	eng, err := start("enginesim", "--listen", "127.0.0.1:0", "--max-num-seqs", strconv.Itoa(o.slots),
		"--speedup-ratio", strconv.FormatFloat(o.speedup, 'f', -1, 64))
	if err != nil {
		return err
	}
	engineURL := fmt.Sprintf("http://%v", eng["addr"])
	sg, err := start("slotgate", "--listen", o.proxyListen, "--admin-listen", o.adminListen, "--admin-grpc-listen", o.grpcListen,
		"--engine-url", engineURL, "--engine-request-limit", strconv.Itoa(o.slots),
		"--request-queue-limit", strconv.Itoa(o.queue), "--drain-delay", "0s")
	if err != nil {
		return err
	}
	proxyURL, adminURL := fmt.Sprintf("http://%v", sg["proxy"]), fmt.Sprintf("http://%v", sg["admin"])
	if err := waitReady(ctx, adminURL); err != nil {
		return err
	}
	fmt.Fprintf(out, "enginesim (%d sequences) at %s\nslotgate (N=%d, Q=%d) at %s, admin %s\n",
		o.slots, engineURL, o.slots, o.queue, proxyURL, adminURL)
	if o.serve {
		return serveUntilInterrupted(ctx, out, proxyURL, adminURL)
	}
	fmt.Fprintf(out, "Driving %d concurrent streams for %s: %d more than N+Q can hold.\n\n",
		o.concurrency, o.duration, o.concurrency-o.slots-o.queue)
	return burst(ctx, o, out, procs, proxyURL, adminURL)
}

// burst runs the load generator while the watcher shows slotgate's state.
func burst(ctx context.Context, o options, out io.Writer, procs *childproc.Group, proxyURL, adminURL string) error {
	resultPath := filepath.Join(procs.LogDir(), "loadgen.json")
	lg, err := procs.Start("slotgate-loadgen", filepath.Join(o.bin, "slotgate-loadgen"),
		"--url", proxyURL, "--mode", "closed",
		"--concurrency", strconv.Itoa(o.concurrency), "--duration", o.duration.String(),
		"--max-tokens", strconv.Itoa(o.maxTokens), "--stream", "--json", resultPath, "--progress-interval", "0")
	if err != nil {
		return err
	}
	w := &watcher{o: o, adminURL: adminURL, out: out, terminal: isTerminal(out)}
	w.run(ctx, lg.Exited())
	if ctx.Err() != nil {
		return nil // Ctrl-C: the deferred clean-up stops everything
	}
	if code := lg.ExitCode(); code != 0 {
		return fmt.Errorf("slotgate-loadgen exited %d; see %s", code, lg.LogPath())
	}
	res, err := readLoadgen(resultPath)
	if err != nil {
		return err
	}
	final, err := scrape(ctx, adminURL)
	if err != nil {
		return err
	}
	s := newSummary(o, res, w, final)
	s.print(out)
	if o.summaryJSON != "" {
		if err := s.writeJSON(o.summaryJSON); err != nil {
			return err
		}
	}
	return s.check()
}

func waitReady(ctx context.Context, adminURL string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("slotgate was not ready within 30s (%s/readyz)", adminURL)
}

// readLoadgen reads slotgate-loadgen's --json report.
func readLoadgen(path string) (loadgen.Report, error) {
	var r loadgen.Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read load generator results: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("parse load generator results %s: %w", path, err)
	}
	return r, nil
}

// serveUntilInterrupted prints how to try slotgate and waits for Ctrl-C.
func serveUntilInterrupted(ctx context.Context, out io.Writer, proxyURL, adminURL string) error {
	fmt.Fprintf(out, `
Try it (Ctrl-C stops everything):

  curl -s %[1]s/v1/completions -H 'Content-Type: application/json' \
       -d '{"model":"sim-model","prompt":"Hello","max_tokens":16}'
  curl -sN %[1]s/v1/chat/completions -H 'Content-Type: application/json' \
       -d '{"model":"sim-model","messages":[{"role":"user","content":"Hi"}],"max_tokens":32,"stream":true}'
  curl -s %[2]s/metrics | grep -E '^(dynamo|slotgate)_'
  curl -s %[2]s/readyz
  curl -s %[2]s/v1/load          # the worker's load: KV blocks, prefill, busy
  curl -sN %[2]s/v1/load/stream  # the same, on every change and every second
  curl -s %[2]s/busy_threshold
`, proxyURL, adminURL)
	<-ctx.Done()
	return nil
}
