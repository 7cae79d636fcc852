package limiter

import "time"

// Stats is a snapshot of a Limiter. The limits and the gauges (Holding,
// Prefilling, Waiting, the tokens, each class's Waiting and QueuedTokens)
// are read together under the lock, so they are consistent with
// each other; the counters are monotonic and read just after.
type Stats struct {
	// Unlimited is true for a pass-through limiter (NewUnlimited); Slots and
	// QueueLen are then zero.
	Unlimited bool
	// Slots (N) and WaitingLimit (W) are 0 when not set.
	Slots        int
	WaitingLimit int
	QueueLen     int
	QueueTimeout time.Duration
	// PrefillTokenLimit (P) and QueueTokenLimit are 0 when not set.
	PrefillTokenLimit int64
	QueueTokenLimit   int64

	// Holding is the number of requests holding a slot; Prefilling the
	// number of those still holding a waiting place (before their first
	// token); Waiting the number in the queue, all classes together.
	Holding    int
	Prefilling int
	Waiting    int
	// PrefillTokens are the prompt tokens of the Prefilling requests;
	// QueuedTokens those of the Waiting ones.
	PrefillTokens int64
	QueuedTokens  int64

	AdmittedDirect   uint64 // took a free slot without queuing
	AdmittedQueued   uint64 // took a slot after waiting in the queue
	RejectedFull     uint64 // refused with ErrQueueFull
	RejectedTokens   uint64 // refused with ErrQueueTokens
	TimedOut         uint64 // left the queue with ErrQueueTimeout
	CancelledWaiting uint64 // left the queue because their context ended
	// DequeuedLIFO counts the grants adaptive LIFO gave to the newest
	// waiter; they are among AdmittedQueued too, and read with it, so
	// AdmittedQueued - DequeuedLIFO never decreases either.
	DequeuedLIFO uint64

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
		Unlimited:         l.unlimited,
		Slots:             setAsZero(l.slots),
		WaitingLimit:      setAsZero(l.waitLimit),
		QueueLen:          l.queueLen,
		QueueTimeout:      l.timeout,
		PrefillTokenLimit: tokensSetAsZero(l.prefillLimit),
		QueueTokenLimit:   tokensSetAsZero(l.queueTokenLimit),
		Holding:           l.holding,
		Prefilling:        l.prefilling,
		Waiting:           l.waiting,
		PrefillTokens:     l.prefillTokens,
		QueuedTokens:      l.queuedTokens,
	}
	for i := range cs {
		cs[i].Waiting, cs[i].QueuedTokens = l.classes[i].waiting, l.classes[i].queuedTokens
	}
	l.mu.Unlock()
	s.AdmittedDirect = l.admittedDirect.Load()
	for i := range l.classes {
		c := &l.classes[i]
		cls := ClassStats{
			Name:             c.name,
			AdmittedQueued:   c.admittedQueued.Load(),
			DequeuedLIFO:     c.admittedLIFO.Load(),
			RejectedFull:     c.rejectedFull.Load(),
			RejectedTokens:   c.rejectedTokens.Load(),
			TimedOut:         c.timedOut.Load(),
			CancelledWaiting: c.cancelledWaiting.Load(),
		}
		cls.AdmittedQueued += cls.DequeuedLIFO // one read of each counter
		s.AdmittedQueued += cls.AdmittedQueued
		s.DequeuedLIFO += cls.DequeuedLIFO
		s.RejectedFull += cls.RejectedFull
		s.RejectedTokens += cls.RejectedTokens
		s.TimedOut += cls.TimedOut
		s.CancelledWaiting += cls.CancelledWaiting
		if cs != nil {
			cls.Waiting, cls.QueuedTokens = cs[i].Waiting, cs[i].QueuedTokens
			cs[i] = cls
		}
	}
	s.Classes = cs
	return s
}
