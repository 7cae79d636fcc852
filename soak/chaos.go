package soak

import (
	"context"
	"math/rand/v2"
	"time"
)

// chaos changes N every 2–4s and the engine's faults every 3–6s, and
// restarts the engine as the load passes 40% and 75% of its duration or
// request budget, until stop is closed.
func (d *driver) chaos(ctx context.Context, stop <-chan struct{}, start, end time.Time) {
	rng := rand.New(rand.NewPCG(uint64(d.opts.Seed), 1<<40))
	every := func(lo, hi int) time.Time {
		return time.Now().Add(time.Duration(lo+rng.IntN(hi-lo+1)) * time.Second)
	}
	nextLimit, nextFaults := every(2, 4), every(3, 6)
	restartAt := []float64{0.4, 0.75}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		if now.After(nextLimit) {
			d.setLimit(ctx, max(1, d.opts.N/2)+rng.IntN(2*d.opts.N-max(1, d.opts.N/2)+1))
			nextLimit = every(2, 4)
		}
		if !d.opts.NoFaults && now.After(nextFaults) {
			d.setFaults(ctx, randomFaults(rng))
			nextFaults = every(3, 6)
		}
		if len(restartAt) > 0 && d.loadProgress(start, end) >= restartAt[0] {
			restartAt = restartAt[1:]
			d.restartEngine()
		}
	}
}

// loadProgress is how far the load is, 0 to 1, by time or by requests,
// whichever is further.
func (d *driver) loadProgress(start, end time.Time) float64 {
	p := 0.0
	if !end.IsZero() {
		p = float64(time.Since(start)) / float64(end.Sub(start))
	}
	if d.opts.Requests > 0 {
		p = max(p, float64(d.requestsSent())/float64(d.opts.Requests))
	}
	return p
}

// setLimit changes N through slotgate's admin API. A raise is recorded
// before it is sent, a lowering once acknowledged, so that the history
// never understates the N in force.
func (d *driver) setLimit(ctx context.Context, n int) {
	raising := n > int(d.curN.Load())
	if raising {
		d.hist.record(time.Now(), n)
	}
	err := d.sidecar.setN(ctx, n)
	if !raising {
		d.hist.record(time.Now(), n)
	}
	if err != nil {
		d.vs.add(InvProcess, "changing N to %d: %v", n, err)
		return
	}
	d.curN.Store(int64(n))
	d.limitChanges++
}

func (d *driver) setFaults(ctx context.Context, f Faults) {
	if err := d.engine.setFaults(ctx, f); err != nil {
		if d.engine.proc.running() {
			d.vs.add(InvProcess, "changing enginesim's faults: %v", err)
		}
		return
	}
	d.faultsNow = f
	d.faultChanges++
}

// restartEngine stops enginesim as SIGTERM does, checks the peak of its
// final stats, and starts it again on the same ports. While it is down,
// slotgate answers 503 (gRPC UNAVAILABLE), which clients retry.
func (d *driver) restartEngine() {
	d.restarting.Store(true)
	defer d.restarting.Store(false)
	d.progress("restarting enginesim")
	d.engMu.Lock()
	since := d.engineStart
	d.engMu.Unlock()
	d.stopEngine(since, "at restart")
	now := time.Now()
	d.engMu.Lock()
	d.engineStart = now
	d.engMu.Unlock()
	d.engineGen.Add(1)
	if err := d.engine.start(); err != nil {
		d.vs.add(InvProcess, "restarting enginesim: %v", err)
		return
	}
	d.restarts++
	if !d.opts.NoFaults {
		// The new process starts with the flags' faults; put back the
		// ones in force.
		d.setFaults(context.Background(), d.faultsNow)
	}
}

// stopEngine stops enginesim and checks its final stats.
func (d *driver) stopEngine(since time.Time, when string) {
	fs, err := d.engine.stop()
	for _, line := range d.engine.proc.out.alarming() {
		d.vs.add(InvProcess, "enginesim printed %q (log %s)", line, d.engine.proc.file.Name())
	}
	if err != nil {
		d.vs.add(InvEngineConcurrency, "%v: the engine's peak cannot be checked", err)
		return
	}
	d.engineObserved(fs.InFlightMax, since, "final stats "+when)
	raise(&d.peakBefore, int64(fs.BeforeFirstTokenMax))
	d.engMu.Lock()
	for k, v := range fs.FaultsInjected {
		d.faultTotals[k] += v
	}
	d.engMu.Unlock()
}
