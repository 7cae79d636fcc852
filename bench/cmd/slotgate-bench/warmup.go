package main

import (
	"context"
	"fmt"
	"time"
)

// The memory scenarios read a proxy's resident memory idle, then with
// requests queued or streams open, and divide the growth. The idle reading
// must be a steady state: a Go proxy's heap grows to its first
// collection's goal (4 MiB) with whatever its requests leave behind, and
// keeps those pages. A warm-up too short for a build to reach that goal
// reads it low when idle, and charges the pages to the queued requests or
// the streams that follow: a build that allocated less per request read
// three times the memory per open stream of the build before it, while
// it held less with the streams open (BENCHMARKS.md). So a warm-up serves
// warmUpServed requests (about 7 MiB of garbage at slotgate's fast path's
// 450 bytes a request), or runs for maxWarmUp on a slow machine.

const (
	warmUpServed = 16000
	maxWarmUp    = 3 * time.Second
)

// warmUp serves fast requests at concurrency conc until warmUpServed
// were served or maxWarmUp has passed, then lets the target settle for
// settle.
func warmUp(ctx context.Context, url string, conc int, settle time.Duration) error {
	deadline := time.Now().Add(maxWarmUp)
	for served := 0; served < warmUpServed && time.Now().Before(deadline); {
		r := closedLoop(ctx, url+"/fast", conc, 250*time.Millisecond)
		if len(r.ok) == 0 {
			return fmt.Errorf("warm-up: no request served (first error: %v)", r.firstErr)
		}
		served += len(r.ok)
	}
	if !sleep(ctx, settle) {
		return ctx.Err()
	}
	return nil
}
