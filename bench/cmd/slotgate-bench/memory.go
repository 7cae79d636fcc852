package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The memory scenario's shape: N requests held by the engine and memQ
// waiting in the proxy's queue (issue 6: "1000 requests queued").
const (
	memN = 8
	memQ = 1000
)

// memory measures the resident memory of the proxy's process tree idle
// (after a warm-up, warmup.go) and then with memN requests in flight and memQ queued,
// and reports what each queued request costs. The target is started
// afresh for each run (the scenario's fresh flag): a Go heap grown by an
// earlier run would hide the next run's growth.
func memory(ctx context.Context, t trial) (map[string]float64, error) {
	if t.inst.pid == 0 || t.inst.queued == nil {
		return nil, errors.New("memory needs a proxy with a queue to read")
	}
	if err := warmUp(ctx, t.url, 16, 300*time.Millisecond); err != nil {
		return nil, err
	}
	idle, err := treeRSS(t.inst.pid)
	if err != nil {
		return nil, err
	}
	// The engine holds each request 30 s, longer than the measurement;
	// closing the connections ends them all.
	conns, err := openRequests(ctx, t.inst.addr, "/work?ms=30000", memN+memQ)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	depth, err := waitQueued(ctx, t.inst.queued, memQ, 15*time.Second)
	if err != nil {
		return nil, err
	}
	busy, err := treeRSS(t.inst.pid)
	if err != nil {
		return nil, err
	}
	st, err := t.eng.stats(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]float64{
		"idle RSS KiB":   float64(idle),
		"queued RSS KiB": float64(busy),
		"KiB/queued":     float64(busy-idle) / memQ,
		"queued":         float64(depth),
		"engine max":     float64(st.MaxInFlight),
	}, nil
}

// waitQueued polls the proxy's queue depth until it reaches want, for at
// most timeout, and returns the depth it saw.
func waitQueued(ctx context.Context, queued func(context.Context) (int, error), want int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	last, lastErr := 0, error(nil)
	for time.Now().Before(deadline) {
		last, lastErr = queued(ctx)
		if lastErr == nil && last >= want {
			return last, nil
		}
		if !sleep(ctx, 20*time.Millisecond) {
			return 0, ctx.Err()
		}
	}
	return 0, fmt.Errorf("queue at %d after %v, want %d (last error: %v)", last, timeout, want, lastErr)
}
