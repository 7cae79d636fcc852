package limiter

import (
	"errors"
	"fmt"
	"math"
)

// Limits are a limiter's bounds as set; a zero Slots, WaitingLimit,
// PrefillTokenLimit or QueueTokenLimit means that limit is not set (see
// Options).
type Limits struct {
	Slots             int
	WaitingLimit      int
	QueueLen          int
	PrefillTokenLimit int64
	QueueTokenLimit   int64
}

// check reports every problem of l.
func (l Limits) check() []error {
	var errs []error
	switch {
	case l.Slots < 0 || l.Slots == 0 && l.WaitingLimit == 0:
		errs = append(errs, fmt.Errorf("slots must be at least 1, got %d", l.Slots))
	}
	if l.WaitingLimit < 0 {
		errs = append(errs, fmt.Errorf("waiting limit must not be negative, got %d", l.WaitingLimit))
	}
	if l.Slots == math.MaxInt || l.WaitingLimit == math.MaxInt {
		// math.MaxInt is how the limiter keeps an unset limit.
		errs = append(errs, fmt.Errorf("slots and waiting limit must be below %d", math.MaxInt))
	}
	if l.QueueLen < 0 {
		errs = append(errs, fmt.Errorf("queue length must not be negative, got %d", l.QueueLen))
	}
	errs = append(errs, checkTokenLimit("prefill token limit", l.PrefillTokenLimit)...)
	return append(errs, checkTokenLimit("queue token limit", l.QueueTokenLimit)...)
}

// checkTokenLimit reports what is wrong with a token limit: negative, or
// math.MaxInt64, which is how the limiter keeps an unset one.
func checkTokenLimit(name string, n int64) []error {
	switch {
	case n < 0:
		return []error{fmt.Errorf("%s must not be negative, got %d", name, n)}
	case n == math.MaxInt64:
		return []error{fmt.Errorf("%s must be below %d", name, int64(math.MaxInt64))}
	}
	return nil
}

// unsetAsMax turns an unset limit (0) into no bound at all.
func unsetAsMax(n int) int {
	if n == 0 {
		return math.MaxInt
	}
	return n
}

// setAsZero is unsetAsMax's inverse, for Stats and Limits.
func setAsZero(n int) int {
	if n == math.MaxInt {
		return 0
	}
	return n
}

// tokensUnsetAsMax and tokensSetAsZero are unsetAsMax and setAsZero for
// the token limits.
func tokensUnsetAsMax(n int64) int64 {
	if n == 0 {
		return math.MaxInt64
	}
	return n
}

func tokensSetAsZero(n int64) int64 {
	if n == math.MaxInt64 {
		return 0
	}
	return n
}

// Limits returns the limits in force; all zero for an unlimited limiter.
func (l *Limiter) Limits() Limits {
	if l.unlimited {
		return Limits{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limitsLocked()
}

func (l *Limiter) limitsLocked() Limits {
	return Limits{
		Slots: setAsZero(l.slots), WaitingLimit: setAsZero(l.waitLimit), QueueLen: l.queueLen,
		PrefillTokenLimit: tokensSetAsZero(l.prefillLimit), QueueTokenLimit: tokensSetAsZero(l.queueTokenLimit),
	}
}

// SetLimits changes the limits at run time. Raising a limit admits waiters
// at once, in the order a release would. Lowering one never takes back a
// held place: admitted requests above a lowered N, W or P finish and what
// they free is not handed on while the limit is still exceeded, and
// waiters beyond a lowered Q or queue token limit stay queued while new
// arrivals are refused.
func (l *Limiter) SetLimits(lim Limits) error {
	return l.update(func(old Limits) Limits { return lim })
}

// SetSlots changes N at run time, keeping W and Q. See SetLimits.
func (l *Limiter) SetSlots(n int) error {
	if n < 1 {
		return fmt.Errorf("limiter: slots must be at least 1, got %d", n)
	}
	return l.update(func(old Limits) Limits { old.Slots = n; return old })
}

// update replaces the limits by what f makes of them, in one step under
// the lock, and admits the waiters that the new limits let in.
func (l *Limiter) update(f func(Limits) Limits) error {
	if l.unlimited {
		return errors.New("limiter: an unlimited limiter has no limits to set")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := f(l.limitsLocked())
	if err := errors.Join(lim.check()...); err != nil {
		return fmt.Errorf("limiter: %w", err)
	}
	l.setLimitsLocked(lim)
	l.dispatchLocked()
	return nil
}

func (l *Limiter) setLimitsLocked(lim Limits) {
	l.slots, l.waitLimit, l.queueLen = unsetAsMax(lim.Slots), unsetAsMax(lim.WaitingLimit), lim.QueueLen
	l.queueBound = max(lim.QueueLen, l.waiting+l.reserved)
	l.prefillLimit, l.queueTokenLimit = tokensUnsetAsMax(lim.PrefillTokenLimit), tokensUnsetAsMax(lim.QueueTokenLimit)
}

// Room is how many more requests the limiter would admit at once, under
// N and W, less the requests waiting: negative when requests wait. It
// does not weigh the prefill-token budget, which depends on each
// request's size; Stats.PrefillTokens tells how much of it is used. A
// caller choosing among limiters (one per data-parallel rank) picks the
// one with the most room. It is a snapshot, for choosing: the admission
// itself decides again under the lock.
func (l *Limiter) Room() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := min(l.slots-l.holding, l.waitLimit-l.prefilling)
	return max(room, 0) - l.waiting
}
