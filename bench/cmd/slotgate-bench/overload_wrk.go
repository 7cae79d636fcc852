package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// The overload storm under wrk (issue 17): the refusal rate of the Go
// client's storm is bounded by the client (200 goroutines and net/http's
// transport on the same two cores, over a third of the machine's busy
// CPU), so two proxies that refuse at different costs can show the same
// rate. wrk refuses nothing and costs the machine a fraction of that: the
// same storm, the same engine and limits, one wrk thread, with a Lua
// script that counts the answers by status, since wrk's own report lumps
// a 529 with every other non-2xx answer.

// stormConns is the storm's offered concurrency, the Go storm's.
const stormConns = 200

// stormLine is what stormScript's done() prints: the answers by kind.
var stormLine = regexp.MustCompile(`(?m)^slotgate-bench storm: served (\d+) refused (\d+) other (\d+)\s*$`)

func overloadWrkScenario() scenario {
	return scenario{
		name: "overload-wrk",
		about: fmt.Sprintf("overload storm under wrk (one thread, %d connections, keep-alive, the same small JSON POST): engine of 8 slots, 50 ms service, N=8, Q=16; "+
			"refused = 529 (or 503) answers, counted by status in wrk's Lua; answer p50/p99 over every answer as wrk reports them (nearly all refusals); "+
			"queued max sampled every 5 ms; client CPU %% = wrk's share of the machine's busy CPU", stormConns),
		n:       8,
		q:       16,
		slots:   8,
		targets: []string{"slotgate", "haproxy", "nginx"},
		metrics: []string{"served/s", "rejected/s", "answer p50 ms", "answer p99 ms", "engine max", "queued max", "proxy CPU µs/req", clientCPUMetric, machineBusyMetric, "errors"},
		wrk:     true,
		measure: overloadWrk,
	}
}

// stormScript makes wrk send reqBody as a JSON POST and count the answers:
// 200 served, 529 or 503 refused (isRejection), anything else other.
func stormScript() string {
	return wrkScript() + `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) served = 0; refused = 0; other = 0 end
function response(status, headers, body)
  if status == 200 then served = served + 1
  elseif status == 529 or status == 503 then refused = refused + 1
  else other = other + 1 end
end
function done(summary, latency, requests)
  local s, r, o = 0, 0, 0
  for _, t in ipairs(threads) do
    s = s + t:get("served"); r = r + t:get("refused"); o = o + t:get("other")
  end
  io.write(string.format("slotgate-bench storm: served %d refused %d other %d\n", s, r, o))
end
`
}

// stormCounts is what parseStorm reads.
type stormCounts struct{ served, refused, other int }

// parseStorm reads stormScript's line from wrk's output.
func parseStorm(out string) (stormCounts, error) {
	m := stormLine.FindStringSubmatch(out)
	if m == nil {
		return stormCounts{}, errors.New(`no "slotgate-bench storm:" line (the Lua script's done())`)
	}
	var n [3]int
	for i, s := range m[1:] {
		v, err := strconv.Atoi(s)
		if err != nil {
			return stormCounts{}, fmt.Errorf("count %q: %w", s, err)
		}
		n[i] = v
	}
	return stormCounts{served: n[0], refused: n[1], other: n[2]}, nil
}

// overloadWrk runs the storm under wrk, sampling the queue as overload
// does, and measures the proxy's CPU and wrk's share of the machine.
func overloadWrk(ctx context.Context, t trial) (map[string]float64, error) {
	meter, err := startStorm(ctx, t)
	if err != nil {
		return nil, err
	}
	run, err := runWrk(ctx, t, "storm.lua", stormScript(), stormConns, "/work?ms=50")
	if err != nil {
		_, _ = meter.stop(ctx, 0)
		return nil, err
	}
	r := run.report
	got, err := meter.stop(ctx, r.requests)
	if err != nil {
		return nil, err
	}
	n, err := parseStorm(run.out)
	if err != nil {
		return nil, fmt.Errorf("wrk's output: %w:\n%s", err, run.out)
	}
	if n.served == 0 {
		return nil, fmt.Errorf("no request served (%d refused, %d other)", n.refused, n.other)
	}
	s := float64(run.secs)
	m := got.metrics
	m["served/s"] = float64(n.served) / s
	m["rejected/s"] = float64(n.refused) / s
	m["answer p50 ms"] = ms(r.p50)
	m["answer p99 ms"] = ms(r.p99)
	m[clientCPUMetric] = 100 * partOfBusy(run.cpu.Seconds()*userHZ, got.before, got.after)
	m["errors"] = float64(max(0, r.errors-n.refused)) // wrk's non-2xx count holds the refusals
	return m, nil
}
