package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The fast path under wrk (issue 17): Debian's wrk, one thread in C,
// beside the driver's Go client, so that a throughput ratio between
// targets is not set by what the client costs. wrk sends the same small
// JSON POST as the Go client (a Lua script), keep-alive, at concurrency
// wrkConns.

const wrkConns = 64

// wrkScenario is the fast path at c=64 under wrk.
func wrkScenario() scenario {
	return scenario{
		name: "fast-wrk-c64",
		about: fmt.Sprintf("fast path under wrk (one thread, %d connections, keep-alive, the same small JSON POST; proxies capped at N=256, Q=16, never reached); "+
			"latency percentiles as wrk reports them", wrkConns),
		n:       256,
		q:       16,
		metrics: []string{"req/s", "p50 ms", "p99 ms", "proxy CPU µs/req", "errors"},
		ratio:   []string{"req/s"},
		warmup:  true,
		wrk:     true,
		measure: wrkFastPath,
	}
}

// needWrk leaves out, saying so, the scenarios that run wrk when there is
// no wrk binary, or fails when they were named in --scenarios.
func needWrk(scs []scenario, wrk string, named bool) ([]scenario, []string, error) {
	if wrk != "" {
		return scs, nil, nil
	}
	var kept []scenario
	var skipped []string
	for _, s := range scs {
		if !s.wrk {
			kept = append(kept, s)
			continue
		}
		msg := s.name + ": wrk not installed (apt-get install wrk, or --wrk PATH)"
		if named {
			return nil, nil, errors.New(msg)
		}
		fmt.Println("slotgate-bench: skipping", msg)
		skipped = append(skipped, msg)
	}
	return kept, skipped, nil
}

// wrkScript makes wrk send reqBody as a JSON POST.
func wrkScript() string {
	return fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\n", reqBody)
}

func wrkFastPath(ctx context.Context, t trial) (map[string]float64, error) {
	cpu := startCPU(t.inst.pid)
	run, err := runWrk(ctx, t, "post.lua", wrkScript(), wrkConns, "/fast")
	if err != nil {
		return nil, err
	}
	r := run.report
	perReq, err := cpu.perRequest(r.requests)
	if err != nil {
		return nil, fmt.Errorf("proxy CPU: %w", err)
	}
	return map[string]float64{
		"req/s":            r.perSecond,
		"p50 ms":           ms(r.p50),
		"p99 ms":           ms(r.p99),
		"proxy CPU µs/req": perReq,
		"errors":           float64(r.errors),
	}, nil
}

// wrkRun is one run of wrk: its output, the report read from it, the run's
// length in whole seconds, and wrk's own CPU time.
type wrkRun struct {
	out    string
	report wrkResult
	secs   int
	cpu    time.Duration
}

// runWrk runs one wrk thread at conns connections on t's path for t.d
// (whole seconds, one at least), with script (written to the run's
// folder as name), and reads its report.
func runWrk(ctx context.Context, t trial, name, script string, conns int, path string) (wrkRun, error) {
	file := filepath.Join(t.env.run, name)
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return wrkRun{}, err
	}
	run := wrkRun{secs: max(1, int(t.d.Round(time.Second)/time.Second))}
	ctx, cancel := context.WithTimeout(ctx, t.d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.env.wrk, "-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", run.secs),
		"--latency", "-s", file, t.url+path)
	out, err := cmd.CombinedOutput()
	run.out = string(out)
	if err != nil {
		return run, fmt.Errorf("wrk: %w: %s", err, out)
	}
	run.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if run.report, err = parseWrk(run.out); err != nil {
		return run, fmt.Errorf("wrk's output: %w:\n%s", err, out)
	}
	return run, nil
}

// wrkResult is what parseWrk reads from wrk's report.
type wrkResult struct {
	requests  int
	perSecond float64
	p50, p99  time.Duration
	errors    int // non-2xx/3xx answers and socket errors
}

var (
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkRate     = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)\s*$`)
	wrkPct      = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.0+)?%\s+([0-9.]+)(us|ms|s|m)\s*$`)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk --latency's report: the requests, their rate, the
// 50th and 99th percentile latencies and the errors.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New(`no "N requests in" line`)
	}
	var err error
	if r.requests, err = strconv.Atoi(m[1]); err != nil {
		return r, fmt.Errorf("requests %q: %w", m[1], err)
	}
	if m = wrkRate.FindStringSubmatch(out); m == nil {
		return r, errors.New(`no "Requests/sec:" line`)
	}
	if r.perSecond, err = strconv.ParseFloat(m[1], 64); err != nil {
		return r, fmt.Errorf("requests per second %q: %w", m[1], err)
	}
	for _, p := range wrkPct.FindAllStringSubmatch(out, -1) {
		d, err := wrkDuration(p[2], p[3])
		if err != nil {
			return r, err
		}
		if p[1] == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if r.p50 == 0 && r.p99 == 0 {
		return r, errors.New("no latency distribution (run wrk with --latency)")
	}
	if m = wrkNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1]) // digits only
		r.errors += n
	}
	if m = wrkSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s) // digits only
			r.errors += n
		}
	}
	return r, nil
}

// wrkDuration reads one of wrk's latencies, a number and its unit.
func wrkDuration(v, unit string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f > 1e9 {
		return 0, fmt.Errorf("latency %q%s: want a number", v, unit)
	}
	scale := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}[strings.TrimSpace(unit)]
	return time.Duration(f * float64(scale)), nil
}
