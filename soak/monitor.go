package soak

import (
	"context"
	"time"
)

// The metrics the soak reads.
const (
	metricQueue       = "dynamo_request_queue"
	metricSlots       = "dynamo_engine_request"
	metricAdmitted17  = "dynamo_backend_admission_engine_request_count"
	metricOutcomes    = "slotgate_requests_total"
	metricGoroutines  = "go_goroutines"
	metricFDs         = "process_open_fds"
	metricInFlightMax = "enginesim_requests_in_flight_max"
	metricInFlight    = "enginesim_requests_in_flight"
	metricBeforeMax   = "enginesim_requests_before_first_token_max"
)

// pollSlotgate reads slotgate's queue and slot gauges every 20ms until
// ctx ends: the queue never above Q, the slots never above the largest N
// in force over slotWindow.
func (d *driver) pollSlotgate(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !d.sidecar.proc.running() {
			d.vs.add(InvProcess, "slotgate exited while the soak ran (log %s)", d.sidecar.logPath)
			return
		}
		fams, err := d.sidecar.metrics(ctx)
		if err != nil {
			continue // a busy machine; the next poll, or the end, will tell
		}
		bound := d.hist.maxSince(time.Now().Add(-slotWindow))
		if q, ok := fams.value(metricQueue); ok {
			raise(&d.peakQueue, int64(q))
			if int(q) > d.opts.Q {
				d.vs.add(InvQueue, "%s read %.0f, over Q = %d", metricQueue, q, d.opts.Q)
			}
		}
		if s, ok := fams.value(metricSlots); ok {
			raise(&d.peakSlots, int64(s))
			if int(s) > bound {
				d.vs.add(InvSlots, "%s read %.0f, over the largest N in force in the last %s, %d", metricSlots, s, slotWindow, bound)
			}
		}
	}
}

// pollEngine reads enginesim's exact peak of requests in flight every
// 100ms: never above the largest N in force since the engine started.
// A scrape that a restart may have overlapped is dropped.
func (d *driver) pollEngine(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gen := d.engineGen.Load()
		if d.restarting.Load() {
			continue
		}
		d.engMu.Lock()
		since := d.engineStart
		d.engMu.Unlock()
		fams, err := d.engine.metrics(ctx)
		if err != nil || d.restarting.Load() || d.engineGen.Load() != gen {
			continue
		}
		d.engineScrapes.Add(1)
		d.checkEnginePeak(fams, since, "polled")
	}
}

// checkEnginePeak checks enginesim's peaks in fams against the largest N
// in force since the engine started at since.
func (d *driver) checkEnginePeak(fams families, since time.Time, when string) {
	peak, ok := fams.value(metricInFlightMax)
	if !ok {
		if !d.missingPeakMetric.Swap(true) {
			d.vs.add(InvEngineConcurrency, "enginesim exports no %s: the engine's concurrency cannot be checked", metricInFlightMax)
		}
		return
	}
	d.engineObserved(int(peak), since, when)
	if b, ok := fams.value(metricBeforeMax); ok {
		raise(&d.peakBefore, int64(b))
	}
}

// engineObserved checks one reading of the engine's peak, reporting each
// new excess of an engine's lifetime once.
func (d *driver) engineObserved(peak int, since time.Time, when string) {
	raise(&d.peakEngine, int64(peak))
	bound := d.hist.maxSince(since)
	if peak <= bound {
		return
	}
	d.engMu.Lock()
	defer d.engMu.Unlock()
	if since.Equal(d.reportedSince) && peak <= d.reportedPeak {
		return
	}
	d.reportedSince, d.reportedPeak = since, peak
	d.vs.add(InvEngineConcurrency, "enginesim started at %s ran %d requests at once (%s, read at %s), over the largest N in force since it started, %d; N history: %s",
		since.Format("15:04:05.000"), peak, when, time.Now().Format("15:04:05.000"), bound, d.hist.String())
}

// raise sets *p to v when v is larger.
func raise(p interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, v int64) {
	for {
		old := p.Load()
		if v <= old || p.CompareAndSwap(old, v) {
			return
		}
	}
}
