package main

import (
	"sync/atomic"
	"time"
)

// How late the engine stand-in sends a stream's events against its own
// schedule: each event waits its gap on a timer (streamGap), and the
// timer's goroutine runs when the machine gives it a processor. On two
// cores shared by the client, the engine and the proxy, that lateness is
// part of every target's inter-token gaps, and it grows with what the
// proxy's threads take from the engine (BENCHMARKS.md, "What the tail at
// 1024 streams is made of"). Reported beside ITL so that the proxy's own
// delay can be told from the engine's.

// lateStep and lateBuckets: a histogram of 100 µs steps up to 500 ms, the
// last bucket holding everything later (at 4096 streams on two cores the
// engine's p99 passes 50 ms even without a proxy).
const (
	lateStep    = 100 * time.Microsecond
	lateBuckets = 5001
)

// lateness counts events by how late they were sent; safe for concurrent
// use. Its zero value is empty.
type lateness struct {
	buckets [lateBuckets]atomic.Int64
}

// record counts one event sent d after its time (d < 0 counts as on time).
func (l *lateness) record(d time.Duration) {
	b := min(max(int(d/lateStep), 0), lateBuckets-1)
	l.buckets[b].Add(1)
}

// reset empties the histogram.
func (l *lateness) reset() {
	for i := range l.buckets {
		l.buckets[i].Store(0)
	}
}

// quantile returns the upper bound of the bucket that holds quantile q
// (0 < q ≤ 1) of the events recorded, and 0 when none was.
func (l *lateness) quantile(q float64) time.Duration {
	var counts [lateBuckets]int64
	total := int64(0)
	for i := range l.buckets {
		counts[i] = l.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	seen := int64(0)
	for i, c := range counts {
		seen += c
		if float64(seen) >= q*float64(total) {
			return time.Duration(i+1) * lateStep
		}
	}
	return lateBuckets * lateStep
}
