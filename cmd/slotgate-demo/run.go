package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// stopGrace is how long a process has to end after SIGTERM before it is
// killed.
const stopGrace = 10 * time.Second

// stack starts the demo's processes; every one joins procs, which the run
// stops whatever happens.
type stack struct {
	ctx   context.Context
	o     options
	procs *childproc.Group
}

// slotgateURLs are the addresses of a started slotgate.
type slotgateURLs struct{ proxy, admin string }

// run starts the processes of the chosen mode, drives it, prints its
// summary and stops everything it started, whatever happens.
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
	s := &stack{ctx: ctx, o: o, procs: procs}
	switch {
	case o.serve:
		return serve(s, out)
	case o.mode == modeHammer:
		return hammer(s, out)
	default:
		return compare(s, out)
	}
}

// startEngine starts an enginesim with o.slots sequences and an unbounded
// waiting queue (vLLM's default) and returns its URL.
func (s *stack) startEngine(name string) (string, error) {
	p, err := s.procs.Start(name, filepath.Join(s.o.bin, "enginesim"), "--listen", "127.0.0.1:0",
		"--max-num-seqs", strconv.Itoa(s.o.slots), "--speedup-ratio", strconv.FormatFloat(s.o.speedup, 'f', -1, 64))
	if err != nil {
		return "", err
	}
	l, err := p.Listening(s.ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%v", l["addr"]), nil
}

// startSlotgate starts slotgate in front of engineURL with N=o.slots and
// Q=o.queue, and W=o.waiting when withWaiting, and waits until it is ready.
func (s *stack) startSlotgate(engineURL string, withWaiting bool) (slotgateURLs, error) {
	o := s.o
	args := []string{"--listen", o.proxyListen, "--admin-listen", o.adminListen, "--admin-grpc-listen", o.grpcListen,
		"--engine-url", engineURL, "--engine-request-limit", strconv.Itoa(o.slots),
		"--request-queue-limit", strconv.Itoa(o.queue), "--drain-delay", "0s"}
	if withWaiting && o.waiting > 0 {
		args = append(args, "--engine-request-waiting-limit", strconv.Itoa(o.waiting))
	}
	p, err := s.procs.Start("slotgate", filepath.Join(o.bin, "slotgate"), args...)
	if err != nil {
		return slotgateURLs{}, err
	}
	l, err := p.Listening(s.ctx)
	if err != nil {
		return slotgateURLs{}, err
	}
	u := slotgateURLs{proxy: fmt.Sprintf("http://%v", l["proxy"]), admin: fmt.Sprintf("http://%v", l["admin"])}
	return u, childproc.WaitReady(s.ctx, u.admin+"/readyz", 30*time.Second)
}

// startLoadgen starts slotgate-loadgen as name against url with args,
// writing its JSON report to the returned path.
func (s *stack) startLoadgen(name, url string, args ...string) (*childproc.Proc, string, error) {
	resultPath := filepath.Join(s.procs.LogDir(), name+".json")
	args = append([]string{"--url", url, "--max-tokens", strconv.Itoa(s.o.maxTokens), "--stream",
		"--json", resultPath, "--progress-interval", "0"}, args...)
	p, err := s.procs.Start(name, filepath.Join(s.o.bin, "slotgate-loadgen"), args...)
	return p, resultPath, err
}

// loadgenDone returns an error when p, which has exited, failed.
func loadgenDone(p *childproc.Proc) error {
	if code := p.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited %d; see %s", p.Name(), code, p.LogPath())
	}
	return nil
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
