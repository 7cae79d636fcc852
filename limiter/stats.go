package limiter

import "time"

// Stats is a snapshot of a Limiter. Holding and Waiting (with each class's
// Waiting) are read together under the lock, so they are consistent with
// each other; the counters are monotonic and read just after.
type Stats struct {
	// Unlimited is true for a pass-through limiter (NewUnlimited); Slots and
	// QueueLen are then zero.
	Unlimited    bool
	Slots        int
	QueueLen     int
	QueueTimeout time.Duration

	// Holding is the number of requests holding a slot; Waiting the number
	// in the queue, all classes together.
	Holding int
	Waiting int

	AdmittedDirect   uint64 // took a free slot without queuing
	AdmittedQueued   uint64 // took a slot after waiting in the queue
	RejectedFull     uint64 // refused with ErrQueueFull
	TimedOut         uint64 // left the queue with ErrQueueTimeout
	CancelledWaiting uint64 // left the queue because their context ended

	// Classes has one entry per policy class, in the order of
	// Options.Classes, so Request.Class indexes it too. With no classes
	// configured it has one entry, named "", for class 0; it is nil for an
	// unlimited limiter, which has no queue. The totals above (but
	// AdmittedDirect) are the sums of these entries, read from the same
	// counters.
	Classes []ClassStats
}

// Stats returns a snapshot of the limiter's state and counters.
func (l *Limiter) Stats() Stats {
	var cs []ClassStats
	if !l.unlimited {
		cs = make([]ClassStats, len(l.classes))
	}
	l.mu.Lock()
	s := Stats{
		Unlimited:    l.unlimited,
		Slots:        l.slots,
		QueueLen:     l.queueLen,
		QueueTimeout: l.timeout,
		Holding:      l.holding,
		Waiting:      l.waiting,
	}
	for i := range cs {
		cs[i].Waiting = l.classes[i].waiting
	}
	l.mu.Unlock()
	if s.Unlimited {
		s.Slots = 0
	}
	s.AdmittedDirect = l.admittedDirect.Load()
	for i := range l.classes {
		c := &l.classes[i]
		cls := ClassStats{
			Name:             c.name,
			AdmittedQueued:   c.admittedQueued.Load(),
			RejectedFull:     c.rejectedFull.Load(),
			TimedOut:         c.timedOut.Load(),
			CancelledWaiting: c.cancelledWaiting.Load(),
		}
		s.AdmittedQueued += cls.AdmittedQueued
		s.RejectedFull += cls.RejectedFull
		s.TimedOut += cls.TimedOut
		s.CancelledWaiting += cls.CancelledWaiting
		if cs != nil {
			cls.Waiting = cs[i].Waiting
			cs[i] = cls
		}
	}
	s.Classes = cs
	return s
}
