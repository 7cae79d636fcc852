package limiter

import "time"

// Stats is a snapshot of a Limiter. Holding and Waiting are read together
// under the lock, so they are consistent with each other; the counters are
// monotonic and read just after.
type Stats struct {
	// Unlimited is true for a pass-through limiter (NewUnlimited); Slots and
	// QueueLen are then zero.
	Unlimited    bool
	Slots        int
	QueueLen     int
	QueueTimeout time.Duration

	// Holding is the number of requests holding a slot; Waiting the number
	// in the queue.
	Holding int
	Waiting int

	AdmittedDirect   uint64 // took a free slot without queuing
	AdmittedQueued   uint64 // took a slot after waiting in the queue
	RejectedFull     uint64 // refused with ErrQueueFull
	TimedOut         uint64 // left the queue with ErrQueueTimeout
	CancelledWaiting uint64 // left the queue because their context ended
}

// Stats returns a snapshot of the limiter's state and counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	s := Stats{
		Unlimited:    l.unlimited,
		Slots:        l.slots,
		QueueLen:     l.queueLen,
		QueueTimeout: l.timeout,
		Holding:      l.holding,
		Waiting:      l.waiting,
	}
	l.mu.Unlock()
	if s.Unlimited {
		s.Slots = 0
	}
	s.AdmittedDirect = l.admittedDirect.Load()
	s.AdmittedQueued = l.admittedQueued.Load()
	s.RejectedFull = l.rejectedFull.Load()
	s.TimedOut = l.timedOut.Load()
	s.CancelledWaiting = l.cancelledWaiting.Load()
	return s
}
