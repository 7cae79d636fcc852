package limiter

import (
	"errors"
	"fmt"
)

// CheckInvariants inspects the limiter under its lock and reports the first
// broken internal invariant, or nil. It exists only in tests: the black-box
// model test calls it after every operation, which makes "no barging" and
// "no false rejection" checkable at an instant where nothing moves.
//
// It checks that
//   - holding and waiting are not negative;
//   - prefilling is within [0, holding]; the prefill and queued tokens
//     are not negative, and no tokens are in prefill when no request is;
//   - waiting never exceeds QueueLen, or the waiters queued when QueueLen
//     was last lowered (so an unlimited limiter never queues);
//   - room under N and W, with the next waiter's tokens fitting P,
//     implies an empty queue (no barging, no false
//     rejection: ErrQueueFull is only returned when this branch of
//     AcquireRequest was not taken, i.e. holding >= slots or waiting > 0,
//     and waiting >= queueLen or the class is at its limit);
//   - each class's waiting is within [0, Limit] and they add up to waiting;
//     each class's queued tokens are its waiters' tokens, and they add up
//     to the queued tokens; a waiter with a TokenCount is linked to it;
//   - the queue is well formed and holds exactly the waiters counted, none
//     of them granted, each in its own class: the single FIFO without
//     classes; with classes, one FIFO per class, the DRR ring linking
//     exactly the non-empty classes, empty classes with a zero deficit and
//     no deficit negative or beyond what DRR holds: below maxCost, plus
//     the quantum for the class being visited.
func (l *Limiter) CheckInvariants() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	if l.holding < 0 {
		errs = append(errs, fmt.Errorf("holding = %d < 0", l.holding))
	}
	if l.waiting < 0 {
		errs = append(errs, fmt.Errorf("waiting = %d < 0", l.waiting))
	}
	if l.reserved < 0 {
		errs = append(errs, fmt.Errorf("reserved = %d < 0", l.reserved))
	}
	if l.prefilling < 0 || l.prefilling > l.holding {
		errs = append(errs, fmt.Errorf("prefilling = %d out of [0, holding = %d]", l.prefilling, l.holding))
	}
	if l.prefillTokens < 0 || l.queuedTokens < 0 || (l.prefilling == 0 && l.prefillTokens != 0) {
		errs = append(errs, fmt.Errorf("prefill tokens = %d with prefilling = %d, queued tokens = %d", l.prefillTokens, l.prefilling, l.queuedTokens))
	}
	if l.waiting+l.reserved > l.queueBound || l.queueBound < l.queueLen {
		errs = append(errs, fmt.Errorf("waiting = %d and reserved = %d > queue bound = %d (queueLen = %d)", l.waiting, l.reserved, l.queueBound, l.queueLen))
	}
	if l.waiting != 0 && l.roomLocked() && l.nextFitsLocked() {
		errs = append(errs, fmt.Errorf("holding = %d < slots = %d, prefilling = %d < waiting limit = %d and the next waiter fits %d - %d tokens, with waiting = %d: free room is not handed to a waiter",
			l.holding, l.slots, l.prefilling, l.waitLimit, l.prefillLimit, l.prefillTokens, l.waiting))
	}
	sum, tokens := 0, int64(0)
	for i := range l.classes {
		c := &l.classes[i]
		sum, tokens = sum+c.waiting, tokens+c.queuedTokens
		if c.waiting < 0 || (c.limit > 0 && c.waiting > c.limit) {
			errs = append(errs, fmt.Errorf("class %d: waiting = %d, limit %d", i, c.waiting, c.limit))
		}
	}
	if sum != l.waiting || tokens != l.queuedTokens {
		errs = append(errs, fmt.Errorf("classes hold %d waiters of %d tokens, waiting = %d of %d tokens", sum, tokens, l.waiting, l.queuedTokens))
	}
	switch q := l.queue.(type) {
	case *fifo:
		if len(l.classes) != 1 {
			errs = append(errs, fmt.Errorf("plain FIFO with %d classes", len(l.classes)))
		}
		errs = append(errs, checkFIFO(q, l.waiting, &l.classes[0]))
	case *drr:
		errs = append(errs, l.checkDRR(q))
	default:
		errs = append(errs, fmt.Errorf("queue is %T", l.queue))
	}
	return errors.Join(errs...)
}

// checkFIFO checks that f is a well-formed list of n ungranted waiters of
// class c.
func checkFIFO(f *fifo, n int, c *class) error {
	var errs []error
	i := 0
	var prev *waiter
	var tokens int64
	for w := f.head; w != nil; w = w.next {
		tokens += w.tokens
		if w.tokens < 0 || w.tokens > maxTokens || (w.count != nil && w.count.w != w) {
			errs = append(errs, fmt.Errorf("queue entry %d has %d tokens, linked to its count %t", i, w.tokens, w.count == nil || w.count.w == w))
		}
		if w.prev != prev {
			errs = append(errs, fmt.Errorf("queue entry %d: prev link broken", i))
			break
		}
		if w.granted {
			errs = append(errs, fmt.Errorf("queue entry %d is still queued after being granted", i))
		}
		if w.cls != c {
			errs = append(errs, fmt.Errorf("queue entry %d is of class %q, queued in %q", i, w.cls.name, c.name))
		}
		if w.cost < 1 || w.cost > maxCost {
			errs = append(errs, fmt.Errorf("queue entry %d has cost %d", i, w.cost))
		}
		prev = w
		i++
		if i > n+1 {
			break // a cycle or a long list; reported below
		}
	}
	if f.tail != prev {
		errs = append(errs, errors.New("queue tail does not match the last entry"))
	}
	if i != n {
		errs = append(errs, fmt.Errorf("queue holds %d entries, want %d", i, n))
	}
	if tokens != c.queuedTokens {
		errs = append(errs, fmt.Errorf("queue holds %d tokens, class %q counts %d", tokens, c.name, c.queuedTokens))
	}
	return errors.Join(errs...)
}

func (l *Limiter) checkDRR(d *drr) error {
	var errs []error
	active := 0
	for i := range l.classes {
		c := &l.classes[i]
		if err := checkFIFO(&c.fifo, c.waiting, c); err != nil {
			errs = append(errs, fmt.Errorf("class %d: %w", i, err))
		}
		// A class carries less than maxCost between visits (less than
		// the cost of its oldest waiter when its last visit ended), and
		// earns at most one quantum more while it is being visited;
		// refunds of reversed grants are capped to keep it so.
		bound := int64(maxCost)
		if c == d.head && d.charged {
			bound += c.quantum
		}
		if c.deficit < 0 || c.deficit >= bound {
			errs = append(errs, fmt.Errorf("class %d: deficit %d out of range", i, c.deficit))
		}
		if c.fifo.head == nil {
			if c.deficit != 0 || c.prev != nil || c.next != nil {
				errs = append(errs, fmt.Errorf("class %d is empty with deficit %d, in the ring %t", i, c.deficit, c.next != nil))
			}
			continue
		}
		active++
		if c.next == nil || c.prev == nil || c.next.prev != c || c.prev.next != c {
			errs = append(errs, fmt.Errorf("class %d has waiters but is not linked in the ring", i))
		}
	}
	if d.head == nil {
		if active != 0 || d.charged {
			errs = append(errs, fmt.Errorf("ring is empty with %d active classes, charged %t", active, d.charged))
		}
		return errors.Join(errs...)
	}
	n := 0
	for c := d.head; ; c = c.next {
		if c == nil || c.fifo.head == nil {
			errs = append(errs, errors.New("ring holds an empty class"))
			break
		}
		if n++; c.next == d.head || n > active {
			break
		}
	}
	if n != active {
		errs = append(errs, fmt.Errorf("ring holds %d classes, %d have waiters", n, active))
	}
	return errors.Join(errs...)
}

// Reserved is the number of queue places held by reservations.
func (l *Limiter) Reserved() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved
}
