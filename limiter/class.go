package limiter

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrBadClass means Request.Class does not index Options.Classes (or is not
// 0 when no classes are configured). It is a caller bug: AcquireRequest
// returns an error wrapping it and counts nothing.
var ErrBadClass = errors.New("limiter: no such policy class")

// Class is one policy class of the overflow queue. Waiters of one class are
// served in arrival order; the classes share the freed slots by deficit
// round robin (see the package documentation).
type Class struct {
	// Name identifies the class in Stats and errors. It must be non-empty
	// and unique among Options.Classes.
	Name string
	// Quantum is the credit, in cost units, a class earns on each visit of
	// the round robin, from 1 to 2^40. Over a busy period the classes that
	// stay backlogged are granted cost in proportion to their quanta.
	Quantum int
	// Limit is the most waiters of this class at once; a request of a
	// class at its limit is refused with ErrQueueFull. Zero means only
	// Options.QueueLen bounds it.
	Limit int
}

// ClassStats is the part of Stats that belongs to one policy class. Its
// counters count exactly the events the totals of the same name count, for
// the requests of this class, so the totals in a Stats are the sums of
// these.
type ClassStats struct {
	Name string
	// Waiting is the number of this class's requests in the queue, and
	// QueuedTokens their prompt tokens.
	Waiting      int
	QueuedTokens int64

	AdmittedQueued   uint64 // took a slot after waiting in the queue
	RejectedFull     uint64 // refused with ErrQueueFull (queue or class full)
	RejectedTokens   uint64 // refused with ErrQueueTokens
	TimedOut         uint64 // left the queue with ErrQueueTimeout
	CancelledWaiting uint64 // left the queue because their context ended
	// DequeuedLIFO counts those of AdmittedQueued that adaptive LIFO chose.
	DequeuedLIFO uint64
}

// Bounds of the scheduling arithmetic: a deficit stays below maxCost +
// maxQuantum, far from overflowing an int64.
const (
	maxQuantum = 1 << 40 // the largest Class.Quantum New accepts
	maxCost    = 1 << 40 // a larger Request.Cost counts as maxCost
)

// class is the state of one policy class. When no classes are configured
// the limiter has one, unnamed, class 0, served by the plain FIFO; its
// scheduling fields then stay unused.
type class struct {
	name    string
	quantum int64
	limit   int

	// Guarded by Limiter.mu.
	waiting      int   // waiters of this class, kept by the limiter
	queuedTokens int64 // their tokens, kept by the limiter
	fifo         fifo  // this class's waiters, in arrival order (drr only)
	deficit      int64 // DRR credit in cost units, >= 0; 0 while empty (drr only)
	// period counts the times the class has emptied, which ends a busy
	// period and resets its deficit (drr only): a refund is owed only
	// within the busy period that paid for the grant.
	period uint64
	// prev and next link the ring of non-empty classes (drr only); nil
	// while the class is empty.
	prev, next *class

	// Counted outside the lock, like the limiter's own counters.
	admittedQueued   atomic.Uint64 // in queue order (FIFO or DRR)
	admittedLIFO     atomic.Uint64 // by adaptive LIFO
	rejectedFull     atomic.Uint64
	rejectedTokens   atomic.Uint64
	timedOut         atomic.Uint64
	cancelledWaiting atomic.Uint64
}

// newClasses validates opts and returns the limiter's classes: one unnamed
// class when opts is empty. It reports every problem it finds.
func newClasses(opts []Class) ([]class, []error) {
	if len(opts) == 0 {
		return make([]class, 1), nil
	}
	var errs []error
	seen := make(map[string]bool, len(opts))
	cs := make([]class, len(opts))
	for i, o := range opts {
		switch {
		case o.Name == "":
			errs = append(errs, fmt.Errorf("class %d: name must not be empty", i))
		case seen[o.Name]:
			errs = append(errs, fmt.Errorf("class %d: duplicate name %q", i, o.Name))
		}
		seen[o.Name] = true
		if o.Quantum < 1 || int64(o.Quantum) > maxQuantum {
			errs = append(errs, fmt.Errorf("class %d (%q): quantum must be between 1 and %d, got %d", i, o.Name, int64(maxQuantum), o.Quantum))
		}
		if o.Limit < 0 {
			errs = append(errs, fmt.Errorf("class %d (%q): limit must not be negative, got %d", i, o.Name, o.Limit))
		}
		c := &cs[i]
		c.name, c.quantum, c.limit = o.Name, int64(o.Quantum), o.Limit
	}
	return cs, errs
}

// classErr refuses a request whose Class is out of range, wrapping
// ErrBadClass, and gives back the queue place it holds (Request.Held):
// it is refused before the limiter looks. nil for a class in range, or
// for any class of an unlimited limiter, which ignores it.
func (l *Limiter) classErr(req Request) error {
	i := req.Class
	if uint(i) < uint(len(l.classes)) || l.unlimited {
		return nil
	}
	req.Held.Release()
	return fmt.Errorf("%w: class %d of %d", ErrBadClass, i, len(l.classes))
}

// schedCost is the scheduling cost of a request: at least 1, at most
// maxCost.
func schedCost(c int) int64 {
	switch {
	case c <= 0:
		return 1
	case int64(c) > maxCost:
		return maxCost
	}
	return int64(c)
}
