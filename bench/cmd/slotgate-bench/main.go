// Command slotgate-bench measures slotgate side by side with no proxy
// (direct), HAProxy and nginx, in one run on 127.0.0.1 (issue 6): the fast
// path at several concurrencies (plotted as latency against offered load),
// SSE streaming, an overload storm, memory per queued request, abandoned
// requests and gRPC streaming, then checks the targets. The client
// is the driver itself; the engine stand-in and the clients that get
// killed are the driver's own binary re-executed as a child (subcommands
// engine and abandon-clients), the gRPC scenario's engine is enginesim
// from --bin, the proxies are child processes too, and every child is
// stopped on exit and on Ctrl-C. `make bench-peers` builds and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
	baseBin                  string
	wrk                      string
	only                     string
	targets                  string
	plot, cpuPlot            string
	pairBase                 string
	reps                     int
	duration                 time.Duration
	keep                     bool
	cpuProfile               bool
}

func main() {
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		subcommand(os.Args[1], os.Args[2:])
		return
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "folder holding the slotgate binary, and enginesim's for grpc-stream")
	flag.StringVar(&o.haproxy, "haproxy", findBinary("haproxy"), "haproxy binary; empty: skip HAProxy")
	flag.StringVar(&o.nginx, "nginx", findBinary("nginx"), "nginx binary; empty: skip nginx")
	flag.StringVar(&o.wrk, "wrk", findBinary("wrk"), "wrk binary, for fast-wrk-c64; empty: skip it")
	flag.StringVar(&o.out, "out", "bench/results", "folder for the JSON results")
	flag.StringVar(&o.only, "scenarios", "", "comma-separated scenarios to run ("+strings.Join(scenarioNames(), ", ")+"); empty: all")
	flag.StringVar(&o.targets, "targets", "", "comma-separated targets every scenario runs on, in that order, instead of its own "+
		"(direct, slotgate, slotgate-1p, slotgate-nethttp, slotgate-base, haproxy, haproxy-maxqueue, nginx); empty: each scenario's own")
	flag.StringVar(&o.baseBin, "base-bin", "", "more slotgate binaries, comma-separated: the targets slotgate-base, slotgate-base2, ... (an older build, say), to measure a change in the same run; empty: none")
	flag.StringVar(&o.plot, "plot", "", "also write the latency plot (SVG) to this path, e.g. bench/latency.svg; empty: only next to the JSON")
	flag.StringVar(&o.cpuPlot, "cpu-plot", "", "also write the plot of proxy CPU per event against streams (SVG) to this path, e.g. bench/streams-cpu.svg; empty: only next to the JSON")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's folder (logs, configs, slotgate's CPU profiles of the streams scenarios) instead of removing it")
	flag.BoolVar(&o.cpuProfile, "cpu-profile", false, "take a CPU profile of every slotgate target during each run of every scenario, into the run's folder (implies --keep); for `go tool pprof`")
	flag.IntVar(&o.reps, "reps", 3, "runs of each measurement per target")
	flag.StringVar(&o.pairBase, "pair-base", "haproxy", "after the tables, compare every other target with this one round by round "+
		"(medians of differences or ratios, and the rounds at or under it); `slotgate-bench pairs` pools several results files; empty: no comparison")
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

// missingPeers lists, and prints, the peers that are not installed.
func missingPeers(o options) []string {
	var out []string
	if o.haproxy == "" {
		out = append(out, "haproxy: not installed (apt-get install haproxy)")
	}
	if o.nginx == "" {
		out = append(out, "nginx: not installed (apt-get install nginx-light)")
	}
	for _, s := range out {
		fmt.Println("slotgate-bench: skipping", s)
	}
	return out
}

// needEnginesim leaves out, saying so, the gRPC scenarios when there is no
// enginesim binary at path (their engine), or fails when they were named
// in --scenarios.
func needEnginesim(scs []scenario, path string, named bool) ([]scenario, []string, error) {
	if isExec(path) || !slices.ContainsFunc(scs, func(s scenario) bool { return s.grpc }) {
		return scs, nil, nil
	}
	fix := fmt.Sprintf("go build -o %s/ ./cmd/enginesim, or make build-all", filepath.Dir(path))
	if named {
		return nil, nil, fmt.Errorf("no enginesim binary at %s for the gRPC scenarios: %s", path, fix)
	}
	var kept []scenario
	var skipped []string
	for _, s := range scs {
		if !s.grpc {
			kept = append(kept, s)
			continue
		}
		msg := fmt.Sprintf("%s: no enginesim binary at %s (%s)", s.name, path, fix)
		fmt.Println("slotgate-bench: skipping", msg)
		skipped = append(skipped, msg)
	}
	return kept, skipped, nil
}

// subcommand runs one of the driver's child roles.
func subcommand(name string, args []string) {
	var err error
	switch name {
	case "engine":
		err = engineMain(args)
	case "abandon-clients":
		err = abandonClientsMain(args)
	case "pairs":
		err = pairsMain(args, os.Stdout)
	default:
		err = fmt.Errorf("unknown subcommand %q (pairs, engine, abandon-clients; the driver itself takes only flags)", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "slotgate-bench %s: %v\n", name, err)
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
	Warnings  []string         `json:"warnings,omitempty"`
	Scenarios []ScenarioResult `json:"scenarios"`
	Targets   []Goal           `json:"targets"`
}

func run(ctx context.Context, o options) error {
	if o.reps < 1 || o.duration <= 0 {
		return errors.New("--reps must be at least 1 and --duration positive")
	}
	sg, err := filepath.Abs(filepath.Join(o.bin, "slotgate"))
	if err != nil || !isExec(sg) {
		return fmt.Errorf("no slotgate binary at %s: run make bench-peers, or go build -o %s/ ./cmd/slotgate", sg, o.bin)
	}
	res := Results{Time: time.Now().UTC(), Command: strings.Join(os.Args, " "), Reps: o.reps, Duration: o.duration.String(),
		Skipped: missingPeers(o)}
	scs, err := pick(scenarios(), o.only)
	if err != nil {
		return err
	}
	sim, err := filepath.Abs(filepath.Join(o.bin, "enginesim"))
	if err != nil {
		return err
	}
	scs, skipped, err := needEnginesim(scs, sim, o.only != "")
	if err != nil {
		return err
	}
	res.Skipped = append(res.Skipped, skipped...)
	if scs, err = filesAndWrk(scs, o, &res); err != nil {
		return err
	}
	runDir, err := os.MkdirTemp("", "slotgate-bench-")
	if err != nil {
		return err
	}
	var base []string
	for b := range strings.SplitSeq(o.baseBin, ",") {
		if b == "" {
			continue
		}
		abs, err := filepath.Abs(b)
		if err != nil || !isExec(abs) {
			return fmt.Errorf("--base-bin %s: not an executable", b)
		}
		base = append(base, abs)
	}
	res.Machine = describe(sg, o.haproxy, o.nginx)
	e := &env{procs: newProcs(), run: runDir, slotgateBin: sg, baseBins: base, enginesim: sim, haproxy: o.haproxy, nginx: o.nginx, wrk: o.wrk,
		nginxHTTP2On: nginxHTTP2On(res.Machine.Nginx), only: splitTargets(o.targets), cpuProfile: o.cpuProfile}
	o.keep = o.keep || o.cpuProfile
	defer e.procs.stopAll()
	eng, err := startEngine(ctx, e.procs, runDir)
	if err != nil {
		return fmt.Errorf("engine stand-in: %w", err)
	}

	fmt.Printf("slotgate-bench: %d runs of %v per target and scenario; logs and configs in %s\n", o.reps, o.duration, runDir)
	for _, sc := range scs {
		fmt.Printf("%s: %s\n", sc.name, sc.about)
		r, err := runScenario(ctx, e, eng, sc, repsFor(sc, o.reps), o.duration)
		if err != nil {
			return fmt.Errorf("%w (logs and configs in %s)", err, runDir)
		}
		res.Scenarios = append(res.Scenarios, r)
	}
	e.procs.stopAll()
	if o.keep {
		fmt.Printf("slotgate-bench: the run's logs, configs and profiles are kept in %s\n", runDir)
	} else {
		os.RemoveAll(runDir)
	}
	res.Targets = goals(res.Scenarios)
	res.Warnings = clientWarnings(res.Scenarios)
	writeTables(os.Stdout, res.Scenarios)
	if o.pairBase != "" {
		writePaired(os.Stdout, pairScenarios([]Results{res}, o.pairBase), o.pairBase)
	}
	writeGoals(os.Stdout, res.Targets)
	writeWarnings(os.Stdout, res.Warnings)
	return saveAll(o, res)
}

// filesAndWrk raises the open-file limit, then leaves out, saying so, the
// scenarios that need more open files than it allows, or wrk when it is
// missing (or fails, for scenarios named in --scenarios).
func filesAndWrk(scs []scenario, o options, res *Results) ([]scenario, error) {
	limit, err := raiseFileLimit()
	if err != nil {
		return nil, err
	}
	scs, skipped, err := needFiles(scs, limit, o.only != "")
	if err != nil {
		return nil, err
	}
	res.Skipped = append(res.Skipped, skipped...)
	scs, skipped, err = needWrk(scs, o.wrk, o.only != "")
	if err != nil {
		return nil, err
	}
	res.Skipped = append(res.Skipped, skipped...)
	return scs, nil
}

// writeWarnings says loudly what makes figures of this run suspect.
func writeWarnings(w io.Writer, ws []string) {
	for _, s := range ws {
		fmt.Fprintf(w, "\n*** WARNING: %s ***\n", s)
	}
}

// saveAll writes the JSON and, when the fast path was measured, the
// latency plot next to it and to --plot.
func saveAll(o options, res Results) error {
	path, err := save(o.out, res)
	if err != nil {
		return err
	}
	fmt.Printf("\nslotgate-bench: results written to %s\n", path)
	stamp := fmt.Sprintf("(medians, %d × %s per point), %s", res.Reps, res.Duration, res.Time.Format("2006-01-02 15:04Z"))
	base := strings.TrimSuffix(path, ".json")
	lat := renderLatencySVG(latencySeries(res.Scenarios), "fast path latency against offered load "+stamp)
	if err := writePlot("latency", lat, base+"-latency.svg", o.plot); err != nil {
		return err
	}
	cpu := renderCPUSVG(cpuSeries(res.Scenarios), "proxy CPU per event against streams held "+stamp)
	return writePlot("CPU per event", cpu, base+"-streams-cpu.svg", o.cpuPlot)
}

// writePlot writes svg, when there is one, to each path that is set.
func writePlot(what string, svg []byte, paths ...string) error {
	if svg == nil {
		return nil
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := writeFile(p, svg); err != nil {
			return err
		}
		fmt.Printf("slotgate-bench: %s plot written to %s\n", what, p)
	}
	return nil
}

// repsFor is the runs per target of sc: --reps, within sc's cap.
func repsFor(sc scenario, reps int) int {
	if sc.maxReps > 0 {
		return min(reps, sc.maxReps)
	}
	return reps
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
	return path, writeFile(path, append(b, '\n'))
}

// writeFile writes through a temporary file, so that a reader never sees
// half a file.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.name)
	}
	return names
}

// splitTargets reads --targets: the names, trimmed; nil when empty.
func splitTargets(s string) []string {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
