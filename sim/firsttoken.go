package sim

import "sync"

// A request is "before its first token" from the moment Submit queues it
// until the step that samples its first output token completes, or until
// it ends without one (Close, or Run returning). This is the engine's own
// view, the same for streaming and non-streaming answers: the stream
// handler writes the token right after that step, and a non-streaming
// answer carries it, with the rest, when the request ends. A preempted
// request that already produced a token does not count again while it
// recomputes. slotgate's waiting limit W is checked against the high-water
// mark: each rank keeps one under its lock, and the engine one over all
// ranks, since the engine-wide peak is not the sum of the ranks' peaks.

// highWater is a count and the most it has been.
type highWater struct {
	n, max int
}

func (h *highWater) add(d int) {
	h.n += d
	h.max = max(h.max, h.n)
}

// sharedHighWater is a highWater shared by all ranks. Lock order: a rank's
// mu, then this mu; nothing takes a rank's mu while holding it.
type sharedHighWater struct {
	mu sync.Mutex
	hw highWater
}

func (s *sharedHighWater) add(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hw.add(d)
}

func (s *sharedHighWater) get() highWater {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hw
}

// countBeforeFirst moves the rank's and the engine's count of requests
// before their first token by d (+1 on arrival, −1 on the first token or
// an end without one). The caller holds r.mu, so the rank's count always
// equals its running and waiting requests with no output.
func (r *rank) countBeforeFirst(d int) {
	r.beforeFirst.add(d)
	r.engineBeforeFirst.add(d)
}
