package soak

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
)

// idleLimit bounds the waits for slotgate to be idle.
const idleLimit = 15 * time.Second

// baseline waits for slotgate to be idle after the warm-up and takes its
// goroutines and open files as the baseline of the leak check.
func (d *driver) baseline(ctx context.Context, rep *Report) {
	d.waitDrained(ctx, "after the warm-up")
	d.transport.CloseIdleConnections()
	time.Sleep(500 * time.Millisecond) // slotgate's side of those connections ends
	g, f, err := d.resources(ctx)
	if err != nil {
		d.vs.add(InvLeak, "baseline: %v", err)
	}
	rep.Goroutines, rep.FDs = g, f
	d.progress("baseline after warm-up: %d goroutines, %d open fds", g, f)
}

func (d *driver) resources(ctx context.Context) (goroutines, fds int, err error) {
	fams, err := d.sidecar.metrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	g, ok1 := fams.value(metricGoroutines)
	f, ok2 := fams.value(metricFDs)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("slotgate exports no %s or %s", metricGoroutines, metricFDs)
	}
	return int(g), int(f), nil
}

// waitDrained waits for slotgate's in-flight and queue gauges, and the
// engine's requests in flight, to read zero.
func (d *driver) waitDrained(ctx context.Context, when string) {
	deadline := time.Now().Add(idleLimit)
	var last string
	for {
		fams, err := d.sidecar.metrics(ctx)
		if err == nil {
			s, _ := fams.value(metricSlots)
			q, _ := fams.value(metricQueue)
			a, _ := fams.value(metricAdmitted17)
			var e float64
			if ef, err := d.engine.metrics(ctx); err == nil {
				e, _ = ef.value(metricInFlight)
			}
			if s == 0 && q == 0 && a == 0 && e == 0 {
				return
			}
			last = fmt.Sprintf("%s %.0f, %s %.0f, %s %.0f, %s %.0f", metricSlots, s, metricQueue, q, metricAdmitted17, a, metricInFlight, e)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			d.vs.add(InvDrained, "%s, still not idle after %s: %s", when, idleLimit, last)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// finish ends the chaos (no faults, N back to its start value), then
// checks that slotgate drained, its resources came back, and N+Q long
// requests are admitted while the next is refused.
func (d *driver) finish(ctx context.Context, rep *Report) {
	if !d.opts.NoFaults {
		d.setFaults(ctx, noFaults)
	}
	d.setLimit(ctx, d.opts.N)
	d.waitDrained(ctx, "after the load")
	d.checkLeaks(ctx, rep)
	if d.opts.NoFaults {
		rep.Burst = "skipped: it needs enginesim's never-ending answers"
		return
	}
	rep.Burst = d.burst(ctx)
	d.waitDrained(ctx, "after the burst")
}

// checkLeaks compares slotgate's goroutines and open files, once idle,
// with the baseline. The margins allow for connections that come and go
// legitimately: slotgate's idle connections to the engine (up to the
// largest N) and the soak's own to the admin port.
func (d *driver) checkLeaks(ctx context.Context, rep *Report) {
	d.transport.CloseIdleConnections()
	maxN := d.hist.largest()
	gMargin, fMargin := 20+2*maxN, 10+maxN
	deadline := time.Now().Add(idleLimit)
	for {
		g, f, err := d.resources(ctx)
		rep.GoroutinesEnd, rep.FDsEnd = g, f
		if err == nil && g <= rep.Goroutines+gMargin && f <= rep.FDs+fMargin {
			return
		}
		if time.Now().After(deadline) {
			d.vs.add(InvLeak, "idle after the load: %d goroutines (baseline %d, margin %d), %d open fds (baseline %d, margin %d), error %v",
				g, rep.Goroutines, gMargin, f, rep.FDs, fMargin, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// burst sends N+Q requests that never end (the engine's never-end fault
// at rate 1): all must be admitted, N running and Q queued, and the next
// one refused with 529 at once, over HTTP and over gRPC. It returns a
// line for the report.
func (d *driver) burst(ctx context.Context) string {
	n, q := d.opts.N, d.opts.Q
	d.setFaults(ctx, Faults{NeverEndRate: 1, Stall: "0s", SlowFirstToken: "0s"})
	defer d.setFaults(ctx, noFaults)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan Attempt, n+q)
	long := plan{proto: HTTP, stream: true, maxTokens: 4, deadline: time.Minute}
	for range n + q {
		go func() { a, _ := d.clients.attempt(bctx, long, d.clients.nextID()); results <- a }() // ends with bctx
	}
	full := false
	deadline := time.Now().Add(idleLimit)
	var s, qu float64
	for !full && time.Now().Before(deadline) && len(results) == 0 {
		if fams, err := d.sidecar.metrics(ctx); err == nil {
			s, _ = fams.value(metricSlots)
			qu, _ = fams.value(metricQueue)
			full = int(s) == n && int(qu) == q
		}
		time.Sleep(20 * time.Millisecond)
	}
	var got []string
	if !full {
		d.vs.add(InvBurst, "%d long requests: slotgate showed %.0f running and %.0f queued, want %d and %d", n+q, s, qu, n, q)
	}
	// The one past N+Q, by each protocol.
	extra := plan{proto: HTTP, maxTokens: 1, deadline: 5 * time.Second}
	a, _ := d.clients.attempt(ctx, extra, d.clients.nextID())
	d.clients.record(a)
	got = append(got, "request N+Q+1: "+clientView(&a))
	if full && (a.Status != 529 || a.Reason != "capacity") {
		d.vs.add(InvBurst, "request N+Q+1 (HTTP) %s: %s, want 529 with reason capacity", a.ID, a.describe())
	}
	extra.proto = GRPC
	g, _ := d.clients.attempt(ctx, extra, d.clients.nextID())
	d.clients.record(g)
	got = append(got, "gRPC call N+Q+1: "+clientView(&g))
	if full && (g.Code != codes.ResourceExhausted || g.Reason != "capacity") {
		d.vs.add(InvBurst, "call N+Q+1 (gRPC) %s: %s, want RESOURCE_EXHAUSTED with reason capacity", g.ID, g.describe())
	}
	// Any of the N+Q that ended before the cancel was refused or failed.
	early := len(results)
	cancel()
	for range n + q {
		r := <-results
		d.clients.record(r)
		if early > 0 {
			early--
			d.vs.add(InvBurst, "long request %s ended before the soak let it go: %s", r.ID, r.describe())
		}
	}
	return fmt.Sprintf("%d admitted (%.0f running, %.0f queued); %s", n+q, s, qu, joinLines(got))
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "; "
		}
		out += l
	}
	return out
}

// conclude stops the processes and runs the checks that need all of
// the access log: request by request, and counts against the metrics.
func (d *driver) conclude(ctx context.Context, rep *Report) {
	fams, err := d.sidecar.metrics(ctx)
	if err != nil {
		d.vs.add(InvProcess, "final scrape of slotgate: %v", err)
		fams = families{}
	}
	d.checkAdmission(fams)
	d.engMu.Lock()
	since := d.engineStart
	d.engMu.Unlock()
	d.stopEngine(since, "at the end")
	if err := d.sidecar.proc.stop(15 * time.Second); err != nil {
		d.vs.add(InvProcess, "%v", err)
	}
	for _, line := range d.sidecar.proc.out.alarming() {
		d.vs.add(InvProcess, "slotgate printed %q (log %s)", line, d.sidecar.logPath)
	}
	entries, err := readAccessLog(d.sidecar.logPath)
	if err != nil {
		d.vs.add(InvLoggedOnce, "reading the access log: %v", err)
	}
	attempts := d.clients.attempts
	d.vs.addAll(Check(attempts, entries))
	d.vs.addAll(CheckCounts(attempts, entries,
		fams.byLabel(metricOutcomes, "outcome", "protocol", "http"), fams.byLabel(metricOutcomes, "outcome")))
	d.vs.addAll(CheckGRPCCounts(attempts, fams.byLabel(metricOutcomes, "outcome", "protocol", "grpc")))

	rep.Requests, rep.Retries = int64(len(attempts)), d.clients.retries.Load()
	rep.ByOutcome = fams.byLabel(metricOutcomes, "outcome")
	rep.ByClient = map[string]int64{}
	for i := range attempts {
		rep.ByClient[clientView(&attempts[i])]++
	}
	rep.Faults = d.faultTotals
	rep.EngineRestarts, rep.LimitChanges, rep.FaultChanges = d.restarts, d.limitChanges, d.faultChanges
	rep.MaxN = d.hist.largest()
	rep.PeakEngine, rep.PeakBeforeFirst = int(d.peakEngine.Load()), int(d.peakBefore.Load())
	rep.PeakSlots, rep.PeakQueue = int(d.peakSlots.Load()), int(d.peakQueue.Load())
	rep.PeakClientActive = int(d.clients.active.peak.Load())
	if d.engineScrapes.Load() == 0 {
		d.vs.add(InvEngineConcurrency, "enginesim's metrics were never read while the soak ran")
	}
	rep.Violations = d.vs.list()
}

// checkAdmission checks Dynamo 1.7's admission counters add up: every
// request received was decided exactly once, and every request that went
// through admission has exactly one outcome.
func (d *driver) checkAdmission(fams families) {
	received, ok := fams.value("dynamo_backend_admission_request_receive_total")
	if !ok {
		d.vs.add(InvAdmission, "slotgate exports no dynamo_backend_admission_request_receive_total")
		return
	}
	admitted, _ := fams.value("dynamo_backend_admission_request_admit_total")
	rejected, _ := fams.value("dynamo_backend_admission_rejection_total")
	cancelledQ, _ := fams.value("dynamo_backend_admission_cancellation_total")
	if decided := admitted + rejected + cancelledQ; decided != received {
		d.vs.add(InvAdmission, "received %.0f, but admitted %.0f + rejected %.0f + cancelled %.0f = %.0f",
			received, admitted, rejected, cancelledQ, decided)
	}
	var outcomes float64
	for _, v := range fams.byLabel(metricOutcomes, "outcome") {
		outcomes += v
	}
	if outcomes != received {
		d.vs.add(InvAdmission, "slotgate_requests_total sums to %.0f, but %.0f requests were received", outcomes, received)
	}
}
