package limiter

// waiter is one request waiting for a slot. Its fields other than ready are
// guarded by Limiter.mu.
type waiter struct {
	// ready is closed when the waiter is granted a slot; nil for a parked
	// waiter (Park), whose grant calls parked.granted instead.
	ready  chan struct{}
	parked *Parked
	// granted is set, under the lock, in the same step that closes ready, so
	// a waiter that gives up can tell whether it already owns a slot.
	granted bool
	// cls is the waiter's policy class, which also counts its outcome.
	cls *class
	// cost is the scheduling cost, charged to the class's deficit by drr.
	cost int64
	// tokens are the request's prompt tokens, counted in the queued tokens
	// while it waits and in the prefill tokens once granted; count, when
	// set, may raise them until the grant (TokenCount).
	tokens int64
	count  *TokenCount
	// seq is the waiter's place in the arrival order of all classes, which
	// tells drr's popNewest the newest waiter.
	seq uint64
	// lifo is set, with granted, when adaptive LIFO chose the waiter.
	lifo bool
	// charged is the cost drr's pop subtracted from the class's deficit
	// when it granted the waiter, and period the class's busy period at
	// that moment (class.period); charged is 0 for a grant that charged
	// nothing (plain FIFO, adaptive LIFO) and after a refund. They make
	// the refund of a reversed grant exact (drr.refund).
	charged int64
	period  uint64

	prev, next *waiter
}

// countAdmitted counts a granted waiter that takes its slot, by the order
// that chose it. The two counters are kept apart so that each, and their
// sum, only ever grows.
func (w *waiter) countAdmitted() {
	if w.lifo {
		w.cls.admittedLIFO.Add(1)
		return
	}
	w.cls.admittedQueued.Add(1)
}

// queue is the order in which waiters are served. The limiter bounds its
// length, in total and per class; the queue only orders. Without policy
// classes it is one FIFO (fifo); with them, one FIFO per class served by
// deficit round robin (drr, drr.go).
type queue interface {
	push(w *waiter)
	// peek returns the waiter pop would return, changing nothing, or nil:
	// the limiter checks that its tokens fit before it grants.
	peek() *waiter
	// pop removes and returns the next waiter to serve, or nil.
	pop() *waiter
	// peekNewest returns the waiter popNewest would return, or nil.
	peekNewest() *waiter
	// popNewest removes and returns the waiter that arrived last, or nil:
	// adaptive LIFO's one grant after a timeout.
	popNewest() *waiter
	// remove takes w out of the queue; w must be queued.
	remove(w *waiter)
	// refund gives back what granting w charged to the order, when the
	// grant is reversed because w's caller left in the same instant.
	refund(w *waiter)
}

// fifo is an intrusive doubly linked list: queuing allocates nothing beyond
// the waiter itself, and removal of a cancelled waiter is O(1).
type fifo struct {
	head, tail *waiter
}

func (f *fifo) push(w *waiter) {
	w.prev, w.next = f.tail, nil
	if f.tail == nil {
		f.head = w
	} else {
		f.tail.next = w
	}
	f.tail = w
}

func (f *fifo) peek() *waiter { return f.head }

func (f *fifo) peekNewest() *waiter { return f.tail }

func (f *fifo) pop() *waiter {
	w := f.head
	if w != nil {
		f.remove(w)
	}
	return w
}

func (f *fifo) popNewest() *waiter {
	w := f.tail
	if w != nil {
		f.remove(w)
	}
	return w
}

// refund does nothing: the plain FIFO charges nothing for a grant.
func (f *fifo) refund(*waiter) {}

func (f *fifo) remove(w *waiter) {
	if w.prev == nil {
		f.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		f.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}
