package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Generator sends one load. Make it with New; Run may be called more than
// once, each call a new run with the same options.
type Generator struct {
	opts   Options
	sender Sender
}

// New checks opts and returns a Generator, or an error joining every
// problem found. It starts nothing.
func New(opts Options) (*Generator, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	inFlight := opts.Concurrency
	if opts.Mode == Open {
		inFlight = opts.MaxOutstanding
	}
	g := &Generator{opts: opts, sender: opts.Sender}
	if g.sender == nil {
		g.sender = newHTTPSender(&g.opts, inFlight)
	}
	return g, nil
}

// Target is where requests are sent: the URL of the endpoint, or the
// Sender's Target.
func (g *Generator) Target() string { return g.sender.Target() }

// Run sends the load and returns its report. It stops issuing requests at
// the first of: Requests issued, Duration passed, ctx done; it then waits up
// to DrainTimeout for the requests in flight and cancels the rest. Run never
// fails: every request's outcome is in the report, and a cancelled ctx only
// ends the run early (Report.Interrupted). Every goroutine it starts has
// ended when it returns, with the HTTP client's idle connections closed
// (an Options.Sender's connections are its owner's to close).
func (g *Generator) Run(ctx context.Context) Report {
	rec := newRecorder()
	issueCtx, stopIssuing := g.issueContext(ctx)
	defer stopIssuing()
	// Requests outlive the end of issuing, and even ctx, until the drain
	// timeout cancels them.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	if hs, ok := g.sender.(*httpSender); ok {
		defer hs.client.CloseIdleConnections()
	}

	start := time.Now()
	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	wg.Go(func() { drainWatch(issueCtx, loadDone, g.opts.DrainTimeout, cancelRequests) })
	progressCtx, stopProgress := context.WithCancel(context.Background())
	if p := g.newProgress(rec, start); p != nil {
		wg.Go(func() { p.run(progressCtx) })
	}

	iss := &issuer{ctx: issueCtx, stop: stopIssuing, limit: g.opts.Requests}
	if g.opts.Mode == Open {
		g.open(iss, reqCtx, rec, start)
	} else {
		g.closed(iss, reqCtx, rec)
	}
	elapsed := time.Since(start)
	interrupted := ctx.Err() != nil
	close(loadDone)
	stopProgress()
	wg.Wait()
	return g.report(rec, elapsed, interrupted)
}

// issueContext is ctx, ended after Duration when one is set.
func (g *Generator) issueContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.opts.Duration > 0 {
		return context.WithTimeout(ctx, g.opts.Duration)
	}
	return context.WithCancel(ctx)
}

// drainWatch cancels the requests in flight when DrainTimeout passed after
// issuing stopped, unless every request ended first (loadDone).
func drainWatch(issueCtx context.Context, loadDone <-chan struct{}, timeout time.Duration, cancel context.CancelFunc) {
	select {
	case <-loadDone:
		return
	case <-issueCtx.Done():
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-loadDone:
	case <-t.C:
		cancel()
	}
}

// issuer hands out request indexes, 0, 1, 2, …, until limit were handed out
// (then it stops issuing) or ctx ended.
type issuer struct {
	ctx   context.Context
	stop  context.CancelFunc
	limit int64 // 0: no limit
	next  atomic.Int64
}

func (s *issuer) claim() (int64, bool) {
	if s.ctx.Err() != nil {
		return 0, false
	}
	i := s.next.Add(1) - 1
	if s.limit > 0 && i >= s.limit-1 {
		// The last one: the drain timeout starts now.
		s.stop()
		if i > s.limit-1 {
			return 0, false
		}
	}
	return i, true
}

// closed runs Concurrency workers, each sending its next request when its
// last one ended, and returns when all of them did.
func (g *Generator) closed(iss *issuer, reqCtx context.Context, rec *recorder) {
	var wg sync.WaitGroup
	for range g.opts.Concurrency {
		wg.Go(func() {
			for {
				i, ok := iss.claim()
				if !ok {
					return
				}
				rec.begin()
				rec.record(g.send(reqCtx, i))
			}
		})
	}
	wg.Wait()
}

// open sends a request at each arrival, on its own goroutine, or drops the
// arrival when MaxOutstanding are in flight. It returns when issuing stopped
// and every request it sent ended.
func (g *Generator) open(iss *issuer, reqCtx context.Context, rec *recorder, start time.Time) {
	var wg sync.WaitGroup
	defer wg.Wait()
	arr := newArrivals(g.opts.Seed, g.opts.Rate, start)
	timer := time.NewTimer(0)
	defer timer.Stop()
	limit := int64(g.opts.MaxOutstanding)
	for {
		if !sleepUntil(iss.ctx, timer, arr.next()) {
			return
		}
		i, ok := iss.claim()
		if !ok {
			return
		}
		if !rec.tryBegin(limit) {
			rec.dropped.Add(1)
			continue
		}
		wg.Go(func() { rec.record(g.send(reqCtx, i)) })
	}
}

// sleepUntil waits for the wall clock to reach at, and reports false if ctx
// ended first. Arrivals already due return at once, so a late loop catches
// up instead of drifting.
func sleepUntil(ctx context.Context, timer *time.Timer, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
