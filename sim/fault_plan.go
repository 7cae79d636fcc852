package sim

import (
	"context"
	"time"
)

// Messages of the injected errors, the same over HTTP and gRPC.
const (
	faultErrorMessage = "Injected fault: internal server error (enginesim --fault-error-rate)."
	faultResetMessage = "Injected fault: connection reset (enginesim --fault-reset-rate)."
)

// faultPlan is the fault one request drew and where it strikes. The
// handlers call its hooks at fixed points of every answer; a hook of
// another fault does nothing, so an answer without a fault runs as
// before. A fault is counted when it takes effect, so a client that
// leaves first is never counted as faulted.
type faultPlan struct {
	f     *Faults
	kind  Fault
	pause time.Duration // Stall or SlowFirstToken
	// at is the output tokens streamed before a reset or a stall strikes:
	// half the answer's expected length, at least 1.
	at     int
	struck bool // the reset or stall has happened
	// done ends the request at the engine (its sequence, its place in
	// flight) before a reset cuts the connection; nil until submitted.
	done func()
}

// plan draws the fault of a validated request.
func (f *Faults) plan(in genInput) *faultPlan {
	kind, set := f.draw()
	p := &faultPlan{f: f, kind: kind, at: max(1, OutputLen(in.key, in.maxTokens, in.ignoreEOS)/2)}
	switch kind {
	case FaultStall:
		p.pause = set.Stall
	case FaultSlowFirstToken:
		p.pause = set.SlowFirstToken
	}
	return p
}

// fails reports whether the request is to be refused at once, before it is
// submitted, and counts it if so.
func (p *faultPlan) fails() bool {
	return p.strike(FaultError)
}

// first is called before a stream's first output token is sent: a slow
// first token waits here. It returns ctx's error if ctx ends first.
func (p *faultPlan) first(ctx context.Context) error {
	if !p.strike(FaultSlowFirstToken) {
		return nil
	}
	return p.f.wait(ctx, p.pause)
}

// streamed is called after each batch of streamed output is sent and
// flushed, sent tokens in all. Once sent reaches the midpoint a stall waits
// here, or a reset is reported: the caller then cuts the connection. It
// returns ctx's error if ctx ends during a stall.
func (p *faultPlan) streamed(ctx context.Context, sent int) (reset bool, err error) {
	if p.struck || sent < p.at {
		return false, nil
	}
	switch {
	case p.strike(FaultReset):
		p.struck = true
		return true, nil
	case p.strike(FaultStall):
		p.struck = true
		return false, p.f.wait(ctx, p.pause)
	}
	return false, nil
}

// neverEnds reports whether a stream must hold back what ends it (the
// finish reason, the usage and [DONE]).
func (p *faultPlan) neverEnds() bool {
	return p.kind == FaultNeverEnd && !p.f.stopped()
}

// end is called once a stream's output is all sent: a never-ending answer
// holds here, calling tick (when not nil) every interval, until ctx ends
// (ctx's error, or tick's) or the Faults shut down (nil: the answer then
// ends as a normal one).
func (p *faultPlan) end(ctx context.Context, every time.Duration, tick func() error) error {
	if !p.strike(FaultNeverEnd) {
		return nil
	}
	return p.f.hold(ctx, every, tick)
}

// beforeAnswer is called once a non-streamed answer is ready: a stall or a
// slow first token waits here, a never-ending answer holds here, and a
// reset is reported, for the caller to cut the connection instead of
// answering. It returns ctx's error if ctx ends first.
func (p *faultPlan) beforeAnswer(ctx context.Context) (reset bool, err error) {
	switch {
	case p.strike(FaultReset):
		return true, nil
	case p.strike(FaultStall), p.strike(FaultSlowFirstToken):
		return false, p.f.wait(ctx, p.pause)
	case p.strike(FaultNeverEnd):
		return false, p.f.hold(ctx, 0, nil)
	}
	return false, nil
}

// strike reports whether the request drew k, and counts it if so.
func (p *faultPlan) strike(k Fault) bool {
	if p.kind != k {
		return false
	}
	p.f.count(k)
	return true
}

// stopped reports whether Shutdown was called.
func (f *Faults) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// wait pauses for d. It returns early, with ctx's error, when ctx ends,
// and with nil after Shutdown.
func (f *Faults) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-f.stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hold waits until ctx ends (its error) or Shutdown (nil), calling tick,
// when not nil, every interval; tick's error ends it with that error.
func (f *Faults) hold(ctx context.Context, every time.Duration, tick func() error) error {
	var ticks <-chan time.Time
	if tick != nil {
		tk := time.NewTicker(every)
		defer tk.Stop()
		ticks = tk.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.stop:
			return nil
		case <-ticks:
			if err := tick(); err != nil {
				return err
			}
		}
	}
}
