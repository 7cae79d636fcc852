package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Engine is the simulated engine: DataParallelSize ranks, each with its own
// scheduler and KV pool. Submit may be called before Run; requests then
// wait until Run starts the ranks' loops.
type Engine struct {
	opts  Options
	ranks []*rank
	iters *iterBuffer
	// beforeFirst counts the requests before their first token over all
	// ranks, with its high-water mark (firsttoken.go).
	beforeFirst sharedHighWater
	// inFlight counts the requests in flight at the APIs, with its
	// high-water mark (inflight.go).
	inFlight sharedHighWater

	admitMu sync.Mutex // serialises rank choice and enqueue in Submit
	started atomic.Bool
	stopped atomic.Bool
	done    chan struct{} // closed when Run returns, once stopped is set
}

// New validates opts, applies the defaults to its zero fields, and returns
// an engine whose loops have not started. It returns every problem with
// opts, joined.
func New(opts Options) (*Engine, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("engine options: %w", err)
	}
	e := &Engine{opts: opts, done: make(chan struct{})}
	if opts.IterationStatsLimit > 0 {
		e.iters = newIterBuffer(opts.IterationStatsLimit)
	}
	for i := range opts.DataParallelSize {
		e.ranks = append(e.ranks, newRank(i, opts, e.iters, &e.beforeFirst))
	}
	return e, nil
}

// Options returns the engine's options, defaults applied.
func (e *Engine) Options() Options { return e.opts }

// Run runs one scheduling loop per rank until ctx ends, then fails every
// unfinished request with ErrStopped and returns nil once all loops have
// ended. It may be called once; a second call returns an error at once.
func (e *Engine) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("sim: engine already running")
	}
	var wg sync.WaitGroup
	for _, r := range e.ranks {
		wg.Go(func() { r.run(ctx) })
	}
	wg.Wait()
	e.stopped.Store(true)
	close(e.done)
	return nil
}

// Stopped reports whether Run has returned.
func (e *Engine) Stopped() bool { return e.stopped.Load() }

// Submit queues a request on the least loaded rank (fewest running +
// waiting, lowest index on a tie) and returns its handle; the caller must
// Close it. It fails with ErrInvalid or ErrTooLong (wrapped) for a request
// the engine can never run, ErrQueueFull when that rank is at
// MaxNumQueuedReqs, and ErrStopped after Run returned.
func (e *Engine) Submit(req Request) (*Handle, error) {
	switch {
	case req.PromptTokens < 1 || req.MaxTokens < 1:
		return nil, fmt.Errorf("%w: prompt tokens %d and max tokens %d must be positive", ErrInvalid, req.PromptTokens, req.MaxTokens)
	case req.PromptTokens+req.MaxTokens > e.opts.MaxModelLen:
		return nil, fmt.Errorf("%w: %d prompt + %d output tokens > %d", ErrTooLong, req.PromptTokens, req.MaxTokens, e.opts.MaxModelLen)
	}
	s := newSeq(req)
	e.admitMu.Lock()
	defer e.admitMu.Unlock()
	best, bestLoad := e.ranks[0], -1
	for _, r := range e.ranks {
		if l := r.load(); bestLoad < 0 || l < bestLoad {
			best, bestLoad = r, l
		}
	}
	if err := best.enqueue(s); err != nil {
		return nil, err
	}
	return &Handle{r: best, s: s}, nil
}

// DrainIterations returns the per-step records kept since the last call,
// oldest first, and forgets them, as TensorRT-LLM's /metrics does. It
// returns an empty slice when IterationStatsLimit is 0.
func (e *Engine) DrainIterations() []IterationStats {
	if e.iters == nil {
		return []IterationStats{}
	}
	return e.iters.drain()
}
