package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Stream churn (issue 17): a stream's opening and end, what the held
// streams' scenarios pay once per stream and bury under their events. A
// burst of generations opens a burst of connections, so each stream here
// is its connection's only request: dialled, answered with a few events,
// read to data: [DONE] and closed, back to back by churnClients clients.
// Proxy CPU over the run ÷ streams is what one such stream costs.

const (
	churnClients = 64
	churnEvents  = 2 // events 10–30 ms apart (streamGap): one gap a stream
)

func churnScenario() scenario {
	return scenario{
		name: "stream-churn",
		about: fmt.Sprintf("stream churn: %d clients, each opening a new connection for a stream of %d numbered events (10–30 ms apart), "+
			"reading it to data: [DONE] and closing it, back to back for --duration; N=256, Q=16, never reached; "+
			"proxy CPU over the run ÷ streams: what a stream's setup and end cost; TTFT from request written to first event", churnClients, churnEvents),
		n: 256, q: 16,
		metrics: []string{"streams/s", "TTFT p50 ms", "TTFT p99 ms", "proxy CPU µs/stream", "lost", "reordered", "errors"},
		added:   []string{"TTFT p50 ms", "TTFT p99 ms"},
		warmup:  true,
		measure: churn,
	}
}

// churn runs the clients for t.d and measures the target's CPU meanwhile.
func churn(ctx context.Context, t trial) (map[string]float64, error) {
	spec := streamSpec{addr: t.inst.addr, events: churnEvents, body: streamBody(0, churnEvents), timeout: 10 * time.Second}
	cpu := startCPU(t.inst.pid)
	start := time.Now()
	deadline := start.Add(t.d)
	seen := make([][]oneStream, churnClients) // each client's, merged after
	var wg sync.WaitGroup
	for c := range churnClients {
		wg.Go(func() {
			for i := c; time.Now().Before(deadline) && ctx.Err() == nil; i += churnClients {
				seen[c] = append(seen[c], readNumbered(ctx, spec, i, func() {}, func() bool { return true }))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	agg := aggregateStreams(slices.Concat(seen...))
	if agg.complete == 0 {
		return nil, fmt.Errorf("no stream complete (%d errors, first: %v)", agg.errors, agg.firstErr)
	}
	perStream, err := cpu.perRequest(agg.complete + agg.errors)
	if err != nil {
		return nil, fmt.Errorf("proxy CPU: %w", err)
	}
	return map[string]float64{
		"streams/s":           float64(agg.complete) / elapsed.Seconds(),
		"TTFT p50 ms":         ms(percentile(agg.ttft, 50)),
		"TTFT p99 ms":         ms(percentile(agg.ttft, 99)),
		"proxy CPU µs/stream": perStream,
		"lost":                float64(agg.lost),
		"reordered":           float64(agg.reordered),
		"errors":              float64(agg.errors),
	}, nil
}
