package main

import (
	"context"
	"fmt"
	"time"
)

// A scenario is one measurement, made on each of its targets with the
// proxies capped at N slots and a queue of Q.
type scenario struct {
	name    string
	about   string
	n, q    int
	slots   int      // the engine's slots (0: unlimited)
	targets []string // the targets it runs on; nil: defaultTargets
	metrics []string // the metrics measure returns, in table order
	// ratio names the metrics also shown as a ratio to direct's median.
	ratio []string
	// added names the metrics also shown as "added <metric>": each run's
	// value minus direct's in the same round.
	added  []string
	conc   int  // the fast path's concurrency, for the latency plot; 0: not plotted
	warmup bool // a short unmeasured run on each target first
	fresh  bool // start each target afresh for every run
	// grpc runs it over gRPC: enginesim's gRPC API is the engine, and the
	// targets are the ones that forward h2c to it.
	grpc bool
	// streams is how many streams a streams-at-scale scenario holds open
	// at once (for the plot and the open-file check); 0 for the others.
	streams int
	// prompt is the bytes of each stream's prompt, 0 for a short one.
	prompt int
	// profile takes a CPU profile of slotgate during each of its runs,
	// for token counting's share (profile.go).
	profile bool
	wrk     bool // it runs wrk (wrk.go)
	// maxReps caps --reps for a scenario whose runs are long (0: none),
	// so that the thousands of streams keep `make bench` within minutes.
	maxReps int
	measure func(ctx context.Context, t trial) (map[string]float64, error)
}

// trial is what one measurement gets.
type trial struct {
	url  string // http://host:port of the target
	inst *instance
	eng  *engineProc
	env  *env
	d    time.Duration // the length of a closed-loop run
}

// sweep is the fast path's concurrencies: the 1, 16 and 64 of issue 6,
// and 4 and 128 for the plot of latency against offered load.
var sweep = []int{1, 4, 16, 64, 128}

func scenarios() []scenario {
	var all []scenario
	for _, c := range sweep {
		sc := scenario{
			name:    fmt.Sprintf("fast-c%d", c),
			about:   fmt.Sprintf("fast path: tiny JSON, keep-alive, concurrency %d (proxies capped at N=256, Q=16, never reached)", c),
			n:       256,
			q:       16,
			metrics: []string{"req/s", "p50 ms", "p99 ms", "proxy CPU µs/req", "errors"},
			ratio:   []string{"req/s", "p50 ms"},
			conc:    c,
			warmup:  true,
			measure: fastPath(c),
		}
		if c == 1 {
			sc.added = []string{"p50 ms"} // issue 6: added p50 at c=1 no more than HAProxy's
		}
		all = append(all, sc)
	}
	all = append(all, scenario{
		name:    "stream",
		about:   "streaming: SSE of 16 chunks 10 ms apart, keep-alive, concurrency 32 (N=256, Q=16, never reached); TTFT from request to first chunk, ITL between chunks",
		n:       256,
		q:       16,
		metrics: []string{"streams/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", "errors"},
		added:   []string{"TTFT p50 ms", "ITL p50 ms"},
		warmup:  true,
		measure: streaming,
	}, scenario{
		name: "overload",
		about: "overload storm: engine of 8 slots, 50 ms service, N=8, Q=16, offered concurrency 200 (closed loop, the driver's Go client); queued max sampled every 5 ms " +
			"(slotgate dynamo_request_queue, HAProxy show stat qcur; nginx has no queue); haproxy-maxqueue is maxconn 8 maxqueue 16 without the queue() ACL, answering 503 after timeout queue 500 ms",
		n:       8,
		q:       16,
		slots:   8,
		targets: []string{"direct", "slotgate", "haproxy", "haproxy-maxqueue", "nginx"},
		metrics: []string{"served/s", "rejected/s", "rej p50 ms", "rej p99 ms", "engine max", "queued max", "proxy CPU µs/req", clientCPUMetric, machineBusyMetric, "errors"},
		measure: overload,
	}, scenario{
		name: "memory",
		about: fmt.Sprintf("memory: resident memory (VmRSS of the proxy's process tree) idle after a warm-up, then with %d in flight (N=%d) and %d queued (Q=%d); "+
			"KiB/queued = growth ÷ %d; a fresh proxy each run; nginx has no queue", memN, memN, memQ, memQ, memQ),
		n:       memN,
		q:       memQ,
		targets: []string{"slotgate", "haproxy"},
		metrics: []string{"idle RSS KiB", "queued RSS KiB", "KiB/queued", "queued", "engine max"},
		fresh:   true,
		measure: memory,
	}, scenario{
		name: "abandon",
		about: "abandoned requests: 40 clients at once (a separate process), N=8, Q=32, 1 s service, the client process killed (SIGKILL) at 0.5 s; " +
			"expected to reach the engine: 8 for a capped target, 40 direct",
		n:       8,
		q:       32,
		metrics: []string{"reached engine", "engine max", "answered"},
		measure: abandoned,
	}, grpcScenario(), wrkScenario(), overloadWrkScenario(), churnScenario())
	return append(all, streamScaleScenarios()...)
}

func fastPath(conc int) func(context.Context, trial) (map[string]float64, error) {
	return func(ctx context.Context, t trial) (map[string]float64, error) {
		cpu := startCPU(t.inst.pid)
		r := closedLoop(ctx, t.url+"/fast", conc, t.d)
		if len(r.ok) == 0 {
			return nil, fmt.Errorf("no request served (%d errors, first: %v)", r.other, r.firstErr)
		}
		perReq, err := cpu.perRequest(len(r.ok) + len(r.rejected) + r.other)
		if err != nil {
			return nil, fmt.Errorf("proxy CPU: %w", err)
		}
		return map[string]float64{
			"req/s":            float64(len(r.ok)) / r.elapsed.Seconds(),
			"p50 ms":           ms(percentile(r.ok, 50)),
			"p99 ms":           ms(percentile(r.ok, 99)),
			"proxy CPU µs/req": perReq,
			"errors":           float64(r.other + len(r.rejected)),
		}, nil
	}
}

// overload runs the storm while sampling the proxy's queue depth every
// 5 ms, on every target alike (direct and nginx have nothing to read),
// and the driver's share of the machine meanwhile.
func overload(ctx context.Context, t trial) (map[string]float64, error) {
	meter, err := startStorm(ctx, t)
	if err != nil {
		return nil, err
	}
	r := closedLoop(ctx, t.url+"/work?ms=50", stormConns, t.d)
	got, err := meter.stop(ctx, len(r.ok)+len(r.rejected)+r.other)
	if err != nil {
		return nil, err
	}
	if len(r.ok) == 0 {
		return nil, fmt.Errorf("no request served (%d rejected, %d errors, first: %v)", len(r.rejected), r.other, r.firstErr)
	}
	s := r.elapsed.Seconds()
	m := got.metrics
	m["served/s"] = float64(len(r.ok)) / s
	m["rejected/s"] = float64(len(r.rejected)) / s
	m["rej p50 ms"] = ms(percentile(r.rejected, 50))
	m["rej p99 ms"] = ms(percentile(r.rejected, 99))
	m[clientCPUMetric] = 100 * share(got.before, got.after)
	m["errors"] = float64(r.other)
	return m, nil
}
