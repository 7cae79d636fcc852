package gate

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
)

// Unpinned is the Request.Rank of a request that names no data-parallel
// rank.
const Unpinned = inflight.Unpinned

// Limiters are the limiters of admission: one for the whole engine, or
// one per data-parallel rank, each with the same limits (Dynamo 1.7's
// limits are per rank). The slice is replaced, never changed, so readers
// load it without a lock. All methods are safe for concurrent use.
type Limiters struct {
	lims   atomic.Pointer[[]*limiter.Limiter]
	mu     sync.Mutex // serialises Grow and SetLimits
	newLim func() (*limiter.Limiter, error)
	ranked bool // one limiter per rank, rather than one for the engine
	// tokens says the limits in force bound tokens (a prefill-token or
	// queue token limit), so that admission needs each request's prompt
	// tokens; kept beside the limits, read without a lock.
	tokens atomic.Bool
}

// EngineLimiter is l, alone, for the whole engine.
func EngineLimiter(l *limiter.Limiter) *Limiters {
	s := &Limiters{}
	s.lims.Store(&[]*limiter.Limiter{l})
	s.tokens.Store(boundsTokens(l.Limits()))
	return s
}

// boundsTokens reports whether lim bounds tokens.
func boundsTokens(lim limiter.Limits) bool {
	return lim.PrefillTokenLimit > 0 || lim.QueueTokenLimit > 0
}

// CountsTokens reports whether the limits in force bound tokens, so that
// admission needs each request's prompt tokens.
func (s *Limiters) CountsTokens() bool { return s.tokens.Load() }

// RankLimiters gives each of n ranks (at least 1) its own limiter, made
// by newLim; Grow makes more with it for ranks the engine reports later.
func RankLimiters(n int, newLim func() (*limiter.Limiter, error)) (*Limiters, error) {
	if n < 1 || newLim == nil {
		return nil, fmt.Errorf("gate: rank limiters need at least one rank and a constructor, got %d", n)
	}
	s := &Limiters{ranked: true, newLim: newLim}
	lims := make([]*limiter.Limiter, 0, n)
	for range n {
		l, err := newLim()
		if err != nil {
			return nil, err
		}
		lims = append(lims, l)
	}
	s.lims.Store(&lims)
	s.tokens.Store(boundsTokens(lims[0].Limits()))
	return s, nil
}

func (s *Limiters) all() []*limiter.Limiter { return *s.lims.Load() }

// PerRank reports whether each rank has its own limiter.
func (s *Limiters) PerRank() bool { return s.ranked }

// Count is the number of limiters: the ranks, or 1 for the engine.
func (s *Limiters) Count() int { return len(s.all()) }

// pick chooses the limiter of a request pinned to rank, or, for an
// unpinned one, of the rank with the most room. It returns the rank
// chosen (rank itself without per-rank limits) and false when the pinned
// rank does not exist.
func (s *Limiters) pick(pinned bool, rank int) (*limiter.Limiter, int, bool) {
	lims := s.all()
	if !s.ranked {
		return lims[0], rank, true
	}
	if pinned {
		if rank < 0 || rank >= len(lims) {
			return nil, rank, false
		}
		return lims[rank], rank, true
	}
	best, bestRoom := 0, math.MinInt
	for i, l := range lims {
		if room := l.Room(); room > bestRoom {
			best, bestRoom = i, room
		}
	}
	return lims[best], best, true
}

// Grow gives the engine n ranks when it has fewer, each with the limits
// in force: the engine reported more ranks than were known at start. It
// never removes one, since requests may hold places in every rank; with
// one limiter for the engine it does nothing.
func (s *Limiters) Grow(n int) error {
	if !s.ranked {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.all()
	if n <= len(old) {
		return nil
	}
	lims := append(make([]*limiter.Limiter, 0, n), old...)
	lim := old[0].Limits()
	for len(lims) < n {
		l, err := s.newLim()
		if err != nil {
			return err
		}
		if err := l.SetLimits(lim); err != nil {
			return err
		}
		lims = append(lims, l)
	}
	s.lims.Store(&lims)
	return nil
}

// Limits returns the limits in force (each rank's, with limits per rank).
func (s *Limiters) Limits() limiter.Limits { return s.all()[0].Limits() }

// SetLimits gives the engine, or each rank, the limits f makes of those
// in force, and returns them before and after. Raising a limit admits
// waiters at once; lowering one takes no place back.
func (s *Limiters) SetLimits(f func(limiter.Limits) limiter.Limits) (old, now limiter.Limits, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lims := s.all()
	old = lims[0].Limits()
	now = f(old)
	for _, l := range lims {
		if err := l.SetLimits(now); err != nil {
			return old, old, err
		}
	}
	s.tokens.Store(boundsTokens(now))
	return old, now, nil
}

// Stats adds up the ranks' stats: the engine's totals, limits included.
func (s *Limiters) Stats() limiter.Stats {
	lims := s.all()
	sum := lims[0].Stats()
	for _, l := range lims[1:] {
		sum = addStats(sum, l.Stats())
	}
	return sum
}

// RankStats returns each rank's stats, in rank order, with limits per
// rank; nil with one limiter for the engine.
func (s *Limiters) RankStats() []limiter.Stats {
	if !s.ranked {
		return nil
	}
	lims := s.all()
	out := make([]limiter.Stats, len(lims))
	for i, l := range lims {
		out[i] = l.Stats()
	}
	return out
}

// addStats adds b to a; both come from limiters of the same options.
func addStats(a, b limiter.Stats) limiter.Stats {
	a.Slots += b.Slots
	a.WaitingLimit += b.WaitingLimit
	a.QueueLen += b.QueueLen
	a.PrefillTokenLimit += b.PrefillTokenLimit
	a.QueueTokenLimit += b.QueueTokenLimit
	a.Holding += b.Holding
	a.Prefilling += b.Prefilling
	a.Waiting += b.Waiting
	a.PrefillTokens += b.PrefillTokens
	a.QueuedTokens += b.QueuedTokens
	a.RejectedTokens += b.RejectedTokens
	a.AdmittedDirect += b.AdmittedDirect
	a.AdmittedQueued += b.AdmittedQueued
	a.RejectedFull += b.RejectedFull
	a.TimedOut += b.TimedOut
	a.CancelledWaiting += b.CancelledWaiting
	a.DequeuedLIFO += b.DequeuedLIFO
	cs := make([]limiter.ClassStats, len(a.Classes))
	for i, c := range a.Classes {
		d := b.Classes[i]
		c.Waiting += d.Waiting
		c.AdmittedQueued += d.AdmittedQueued
		c.RejectedFull += d.RejectedFull
		c.QueuedTokens += d.QueuedTokens
		c.RejectedTokens += d.RejectedTokens
		c.TimedOut += d.TimedOut
		c.CancelledWaiting += d.CancelledWaiting
		c.DequeuedLIFO += d.DequeuedLIFO
		cs[i] = c
	}
	a.Classes = cs
	return a
}
