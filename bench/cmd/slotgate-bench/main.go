// Command slotgate-bench measures slotgate side by side with no proxy
// (direct), HAProxy and nginx, in one run on 127.0.0.1: the fast path, an
// overload storm and abandoned requests (issue 6). It starts a tiny engine
// stand-in in its own process and the proxies as child processes, which it
// stops on exit and on Ctrl-C. `make bench-peers` builds and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin, haproxy, nginx, out string
	only                     string
	reps                     int
	duration                 time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "folder holding the slotgate binary")
	flag.StringVar(&o.haproxy, "haproxy", findBinary("haproxy"), "haproxy binary; empty: skip HAProxy")
	flag.StringVar(&o.nginx, "nginx", findBinary("nginx"), "nginx binary; empty: skip nginx")
	flag.StringVar(&o.out, "out", "bench/results", "folder for the JSON results")
	flag.StringVar(&o.only, "scenarios", "", "comma-separated scenarios to run (fast-c1, fast-c16, fast-c64, overload, abandon); empty: all")
	flag.IntVar(&o.reps, "reps", 3, "runs of each measurement per target")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each closed-loop run")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		if interrupted {
			err = fmt.Errorf("interrupted (every process started was stopped): %w", err)
		}
		fmt.Fprintln(os.Stderr, "slotgate-bench:", err)
		os.Exit(1)
	}
}

// Results is the JSON written to the results folder.
type Results struct {
	Time      time.Time        `json:"time"`
	Machine   machine          `json:"machine"`
	Command   string           `json:"command"`
	Reps      int              `json:"reps"`
	Duration  string           `json:"duration"`
	Skipped   []string         `json:"skipped,omitempty"`
	Scenarios []ScenarioResult `json:"scenarios"`
}

func run(ctx context.Context, o options) error {
	if o.reps < 1 || o.duration <= 0 {
		return errors.New("--reps must be at least 1 and --duration positive")
	}
	sg, err := filepath.Abs(filepath.Join(o.bin, "slotgate"))
	if err != nil || !isExec(sg) {
		return fmt.Errorf("no slotgate binary at %s: run make bench-peers, or go build -o %s/ ./cmd/slotgate", sg, o.bin)
	}
	res := Results{Time: time.Now().UTC(), Command: strings.Join(os.Args, " "), Reps: o.reps, Duration: o.duration.String()}
	if o.haproxy == "" {
		res.Skipped = append(res.Skipped, "haproxy: not installed (apt-get install haproxy)")
	}
	if o.nginx == "" {
		res.Skipped = append(res.Skipped, "nginx: not installed (apt-get install nginx-light)")
	}
	for _, s := range res.Skipped {
		fmt.Println("slotgate-bench: skipping", s)
	}
	scs, err := pick(scenarios(), o.only)
	if err != nil {
		return err
	}
	runDir, err := os.MkdirTemp("", "slotgate-bench-")
	if err != nil {
		return err
	}
	e := &env{procs: newProcs(), run: runDir, slotgateBin: sg, haproxy: o.haproxy, nginx: o.nginx}
	defer e.procs.stopAll()
	res.Machine = describe(sg, o.haproxy, o.nginx)
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()

	fmt.Printf("slotgate-bench: %d runs of %v per target and scenario; logs and configs in %s\n", o.reps, o.duration, runDir)
	for _, sc := range scs {
		fmt.Printf("%s: %s\n", sc.name, sc.about)
		r, err := runScenario(ctx, e, up, sc, o.reps, o.duration)
		if err != nil {
			return fmt.Errorf("%w (logs and configs in %s)", err, runDir)
		}
		res.Scenarios = append(res.Scenarios, r)
	}
	os.RemoveAll(runDir)
	writeTables(os.Stdout, res.Scenarios)
	path, err := save(o.out, res)
	if err != nil {
		return err
	}
	fmt.Printf("\nslotgate-bench: results written to %s\n", path)
	return nil
}

func pick(all []scenario, only string) ([]scenario, error) {
	if only == "" {
		return all, nil
	}
	var out []scenario
	for name := range strings.SplitSeq(only, ",") {
		i := slices.IndexFunc(all, func(s scenario) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("--scenarios: unknown scenario %q", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func save(dir string, res Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, res.Time.Format("20060102T150405Z")+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
