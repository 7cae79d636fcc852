package main

import (
	"context"
	"fmt"
	"time"
)

// A scenario is one measurement, made on every target with the proxies
// capped at N slots and a queue of Q.
type scenario struct {
	name    string
	about   string
	n, q    int
	slots   int      // the engine's slots (0: unlimited)
	metrics []string // the metrics measure returns, in table order
	// ratio names the metrics also shown as a ratio to direct's median.
	ratio   []string
	warmup  bool
	measure func(ctx context.Context, url string, up *upstream, d time.Duration) (map[string]float64, error)
}

func scenarios() []scenario {
	var all []scenario
	for _, c := range []int{1, 16, 64} {
		all = append(all, scenario{
			name:    fmt.Sprintf("fast-c%d", c),
			about:   fmt.Sprintf("fast path: tiny JSON, keep-alive, concurrency %d (proxies capped at N=256, Q=16, never reached)", c),
			n:       256,
			q:       16,
			metrics: []string{"req/s", "p50 ms", "p99 ms", "errors"},
			ratio:   []string{"req/s", "p50 ms"},
			warmup:  true,
			measure: fastPath(c),
		})
	}
	all = append(all, scenario{
		name:    "overload",
		about:   "overload storm: engine of 8 slots, 50 ms service, N=8, Q=16, offered concurrency 200 (closed loop)",
		n:       8,
		q:       16,
		slots:   8,
		metrics: []string{"served/s", "rejected/s", "rej p50 ms", "rej p99 ms", "engine max", "errors"},
		measure: overload,
	}, scenario{
		name:    "abandon",
		about:   "abandoned requests: 40 clients at once, N=8, Q=32, 1 s service, every client leaves at 0.5 s; expected to reach the engine: 8 for a capped target, 40 direct",
		n:       8,
		q:       32,
		metrics: []string{"reached engine", "engine max", "answered"},
		measure: abandoned,
	})
	return all
}

func fastPath(conc int) func(context.Context, string, *upstream, time.Duration) (map[string]float64, error) {
	return func(ctx context.Context, url string, _ *upstream, d time.Duration) (map[string]float64, error) {
		r := closedLoop(ctx, url+"/fast", conc, d)
		if len(r.ok) == 0 {
			return nil, fmt.Errorf("no request served (%d errors, first: %v)", r.other, r.firstErr)
		}
		return map[string]float64{
			"req/s":  float64(len(r.ok)) / r.elapsed.Seconds(),
			"p50 ms": ms(percentile(r.ok, 50)),
			"p99 ms": ms(percentile(r.ok, 99)),
			"errors": float64(r.other + len(r.rejected)),
		}, nil
	}
}

func overload(ctx context.Context, url string, up *upstream, d time.Duration) (map[string]float64, error) {
	r := closedLoop(ctx, url+"/work?ms=50", 200, d)
	if len(r.ok) == 0 {
		return nil, fmt.Errorf("no request served (%d rejected, %d errors, first: %v)", len(r.rejected), r.other, r.firstErr)
	}
	s := r.elapsed.Seconds()
	return map[string]float64{
		"served/s":   float64(len(r.ok)) / s,
		"rejected/s": float64(len(r.rejected)) / s,
		"rej p50 ms": ms(percentile(r.rejected, 50)),
		"rej p99 ms": ms(percentile(r.rejected, 99)),
		"engine max": float64(up.maxIn.Load()),
		"errors":     float64(r.other),
	}, nil
}

func abandoned(ctx context.Context, url string, up *upstream, _ time.Duration) (map[string]float64, error) {
	served, rejected := abandon(ctx, url+"/work?ms=1000", 40, 500*time.Millisecond)
	// Give a proxy time to forward what it still holds: anything queued
	// would reach the engine once the first 8 end (at 0.5 s when the proxy
	// aborts them, at 1 s otherwise).
	if !sleep(ctx, 1500*time.Millisecond) {
		return nil, ctx.Err()
	}
	return map[string]float64{
		"reached engine": float64(up.received.Load()),
		"engine max":     float64(up.maxIn.Load()),
		"answered":       float64(served + rejected),
	}, nil
}
