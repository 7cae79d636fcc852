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
//   - waiting never exceeds QueueLen (so an unlimited limiter never queues);
//   - holding < slots implies an empty queue (no barging, no false
//     rejection: ErrQueueFull is only returned when this branch of
//     AcquireRequest was not taken, i.e. holding >= slots or waiting > 0,
//     and waiting >= queueLen);
//   - the FIFO list is well formed, holds exactly waiting waiters, and none
//     of them has been granted a slot.
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
	if l.waiting > l.queueLen {
		errs = append(errs, fmt.Errorf("waiting = %d > queueLen = %d", l.waiting, l.queueLen))
	}
	if l.holding < l.slots && l.waiting != 0 {
		errs = append(errs, fmt.Errorf("holding = %d < slots = %d with waiting = %d: a free slot is not handed to a waiter", l.holding, l.slots, l.waiting))
	}
	f, ok := l.queue.(*fifo)
	if !ok {
		errs = append(errs, fmt.Errorf("queue is %T, not *fifo", l.queue))
		return errors.Join(errs...)
	}
	n := 0
	var prev *waiter
	for w := f.head; w != nil; w = w.next {
		if w.prev != prev {
			errs = append(errs, fmt.Errorf("queue entry %d: prev link broken", n))
			break
		}
		if w.granted {
			errs = append(errs, fmt.Errorf("queue entry %d is still queued after being granted", n))
		}
		prev = w
		n++
		if n > l.waiting+1 {
			break // a cycle or a long list; reported below
		}
	}
	if f.tail != prev {
		errs = append(errs, errors.New("queue tail does not match the last entry"))
	}
	if n != l.waiting {
		errs = append(errs, fmt.Errorf("queue holds %d entries, waiting = %d", n, l.waiting))
	}
	return errors.Join(errs...)
}
