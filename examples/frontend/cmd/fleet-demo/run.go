package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/internal/childproc"
	"github.com/slotgate/slotgate/loadgen"
)

// stopGrace is how long a process has to end after SIGTERM before its
// process group is killed.
const stopGrace = 5 * time.Second

// run starts the fleet, drives the burst through each frontend, prints the
// summary and stops every process it started, whatever happens.
func run(ctx context.Context, o options, out io.Writer) error {
	logDir, err := os.MkdirTemp("", "slotgate-fleet-demo-")
	if err != nil {
		return fmt.Errorf("log folder: %w", err)
	}
	ps := childproc.NewGroup(logDir, stopGrace)
	var s summary
	runErr := drive(ctx, o, out, ps, &s)
	s.Processes = ps.StopAll()
	fmt.Fprintf(out, "\nEvery process stopped (%d). Logs: %s\n", len(s.Processes), logDir)
	var errs []error
	if runErr != nil && ctx.Err() == nil {
		errs = append(errs, runErr)
	}
	for _, p := range s.Processes {
		if !p.Ended {
			errs = append(errs, fmt.Errorf("%s (pid %d) did not end", p.Name, p.PID))
		}
	}
	if o.summaryJSON != "" && runErr == nil {
		if err := s.writeJSON(o.summaryJSON); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// drive starts the fleet and runs the burst in each mode, the fleet
// drained in between, then prints the summary.
func drive(ctx context.Context, o options, out io.Writer, ps *childproc.Group, s *summary) error {
	fleet, err := startFleet(ctx, o, ps)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d workers, each enginesim (%d sequences, %d KV blocks) behind slotgate N=%d W=%d Q=%d,\n"+
		"busy when KV use > %.0f%% or prefill > %d tokens.\n", o.workers, o.slots, o.kvBlocks,
		o.slots, o.waiting, o.queue, o.decodeThreshold*100, o.prefillThreshold)
	modes := []mode{
		{name: "load", policy: router.PolicyLoad, retries: o.retries},
		{name: "roundrobin", policy: router.PolicyRoundRobin, retries: o.rrRetries},
	}
	for i, m := range modes {
		if i > 0 {
			fmt.Fprintln(out, "\nWaiting for the fleet to drain...")
			if err := waitDrained(ctx, fleet); err != nil {
				return err
			}
		}
		r, err := burst(ctx, o, out, ps, fleet, m)
		if err != nil {
			return err
		}
		s.Modes = append(s.Modes, r)
	}
	s.print(out)
	return nil
}

// mode is one frontend configuration the burst runs through.
type mode struct {
	name    string
	policy  router.Policy
	retries int
}

// burst starts a frontend in mode m, drives the burst through it while
// the live view runs, and stops the frontend.
func burst(ctx context.Context, o options, out io.Writer, ps *childproc.Group, fleet []member, m mode) (modeResult, error) {
	args := []string{"--listen", "127.0.0.1:0", "--policy", string(m.policy),
		"--cooldown", o.cooldown.String(), "--retries", strconv.Itoa(m.retries)}
	for _, w := range fleet {
		args = append(args, "--worker", "name="+w.name+",proxy="+w.proxy+",admin="+w.admin)
	}
	fe, err := ps.Start("frontend-"+m.name, o.frontend, args...)
	if err != nil {
		return modeResult{}, err
	}
	defer fe.Stop()
	line, err := fe.Listening(ctx)
	if err != nil {
		return modeResult{}, err
	}
	feURL := fmt.Sprintf("http://%v", line["addr"])
	if err := waitFresh(ctx, feURL); err != nil {
		return modeResult{}, err
	}
	fmt.Fprintf(out, "\n%s: frontend --policy %s --retries %d at %s; %v arrivals/s for %s, prompts %s tokens\n",
		m.name, m.policy, m.retries, feURL, o.rate, o.duration, o.promptTokens)

	resultPath := filepath.Join(ps.LogDir(), "loadgen-"+m.name+".json")
	lg, err := ps.Start("loadgen-"+m.name, filepath.Join(o.bin, "slotgate-loadgen"), "--url", feURL,
		"--mode", "open", "--rate", strconv.FormatFloat(o.rate, 'f', -1, 64), "--seed", "1",
		"--duration", o.duration.String(), "--drain-timeout", "20s",
		"--prompt-tokens", o.promptTokens, "--max-tokens", o.maxTokens,
		"--stream", "--json", resultPath, "--progress-interval", "0")
	if err != nil {
		return modeResult{}, err
	}
	v := &liveView{out: out, url: feURL}
	last := v.run(ctx, lg.Exited())
	if ctx.Err() != nil {
		return modeResult{}, ctx.Err()
	}
	if code := lg.ExitCode(); code != 0 {
		return modeResult{}, fmt.Errorf("slotgate-loadgen exited %d; see %s", code, lg.LogPath())
	}
	lr, err := readLoadgen(resultPath)
	if err != nil {
		return modeResult{}, err
	}
	return newModeResult(m, lr, last), nil
}

// waitFresh waits until the frontend has a fresh snapshot of every worker.
func waitFresh(ctx context.Context, feURL string) error {
	return poll(ctx, 30*time.Second, "the frontend's first snapshots", func() (bool, error) {
		var st router.Stats
		if _, err := getJSON(ctx, feURL+"/frontend/stats", &st); err != nil {
			return false, nil
		}
		for _, w := range st.Workers {
			if w.State != "fresh" {
				return false, nil
			}
		}
		return true, nil
	})
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
