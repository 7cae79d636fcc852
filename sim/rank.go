package sim

import (
	"slices"
	"sync"
)

// rank is one data-parallel engine: its own waiting queue, running batch
// and KV pool. Every field below mu is guarded by it.
type rank struct {
	id     int
	opts   Options
	usable int // allocatable blocks: NumGPUBlocks minus the null block
	iters  *iterBuffer
	wake   chan struct{} // one buffered place: wakes an idle loop

	engineBeforeFirst *sharedHighWater // the engine's, over all ranks

	mu       sync.Mutex
	waiting  []*seq // FIFO; preempted requests go back to the front
	running  []*seq // admission order; preemption takes the last
	used     int    // blocks held by running requests
	stopped  bool
	counters rankCounters
	last     lastStep
	// beforeFirst counts the running and waiting requests with no output
	// token yet (firsttoken.go).
	beforeFirst highWater
}

// rankCounters are the cumulative counts the metrics export.
type rankCounters struct {
	promptTokens, generationTokens, preemptions uint64
	finished                                    map[string]uint64
	steps, allocatedBlocks                      uint64
}

// lastStep describes the most recent step, for gauges about throughput.
type lastStep struct {
	sampled int // output tokens produced
	seconds float64
}

func newRank(id int, opts Options, iters *iterBuffer, beforeFirst *sharedHighWater) *rank {
	return &rank{
		id: id, opts: opts, usable: opts.NumGPUBlocks - 1, iters: iters,
		wake: make(chan struct{}, 1), engineBeforeFirst: beforeFirst,
		counters: rankCounters{finished: map[string]uint64{}},
	}
}

// load is the rank's requests, running and waiting.
func (r *rank) load() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running) + len(r.waiting)
}

// enqueue appends a new request to the waiting queue, unless the rank
// stopped or holds MaxNumQueuedReqs requests already.
func (r *rank) enqueue(s *seq) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped:
		return ErrStopped
	case r.opts.MaxNumQueuedReqs > 0 && len(r.running)+len(r.waiting) >= r.opts.MaxNumQueuedReqs:
		return ErrQueueFull
	}
	r.waiting = append(r.waiting, s)
	r.countBeforeFirst(1)
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

func (r *rank) free() int { return r.usable - r.used }

// blocksFor is the blocks that tokens tokens occupy.
func (r *rank) blocksFor(tokens int) int {
	return (tokens + r.opts.BlockSize - 1) / r.opts.BlockSize
}

func (r *rank) allocate(s *seq, n int) {
	if n <= 0 {
		return
	}
	if n > r.free() {
		panic("sim: KV blocks over-allocated") // schedule checks first
	}
	s.blocks += n
	r.used += n
	r.counters.allocatedBlocks += uint64(n)
}

func (r *rank) release(s *seq) {
	r.used -= s.blocks
	s.blocks = 0
}

// abort ends s at once if it has not ended, wherever it is.
func (r *rank) abort(s *seq) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.state == stateFinished {
		return
	}
	r.end(s, FinishAbort, nil)
}

// end removes s from the queue or batch that holds it, frees its blocks,
// and records how it ended.
func (r *rank) end(s *seq, reason string, err error) {
	switch s.state {
	case stateWaiting:
		r.waiting = slices.DeleteFunc(r.waiting, func(x *seq) bool { return x == s })
	case stateRunning:
		r.running = slices.DeleteFunc(r.running, func(x *seq) bool { return x == s })
		r.release(s)
	}
	if s.output == 0 {
		r.countBeforeFirst(-1)
	}
	s.state, s.finish, s.err = stateFinished, reason, err
	if err == nil {
		r.counters.finished[reason]++
	}
	s.signal()
}

// preemptLast sends the newest running request back to the head of the
// waiting queue, freeing its blocks; its tokens are recomputed later.
func (r *rank) preemptLast() *seq {
	s := r.running[len(r.running)-1]
	r.running = r.running[:len(r.running)-1]
	r.release(s)
	s.computed, s.state, s.preempted = 0, stateWaiting, true
	r.waiting = slices.Insert(r.waiting, 0, s)
	r.counters.preemptions++
	return s
}

// stop fails every unfinished request with ErrStopped and refuses new ones.
func (r *rank) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for _, s := range slices.Concat(r.running, r.waiting) {
		r.end(s, "", ErrStopped)
	}
}
