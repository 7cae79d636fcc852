package gate

import (
	"math"
	"sync"
	"time"
)

// The bounds of a computed retry hint, in whole seconds: a client told to
// come back sooner than 1 s would only be refused again, and one told
// more than a minute has better places to go (Retry-After is a hint, and
// a balancer's cooldown should not outlive a worker's trouble).
const (
	MinRetryAfter = time.Second
	MaxRetryAfter = 60 * time.Second
)

// paceWindow is the time constant of the release rate: releases count
// less the older they are, by e^(-age/paceWindow). Ten seconds follows a
// change of the engine's pace within a few generations and smooths the
// bursts of a batch finishing at once.
const paceWindow = 10 * time.Second

// paceMinSpan is the shortest span the first releases are spread over:
// one release alone says little about a rate.
const paceMinSpan = time.Second

// pace measures the rate at which admitted requests release their slots,
// as an exponentially decayed count of releases normalized by the span it
// has seen. The normalization makes it unbiased from the first release
// (a decayed count alone starts at 0 and takes a few windows to rise),
// and the decay makes it fall when releases stop while slots are held, as
// for a hung engine. Time with no slot held does not count: an idle
// engine is not a slow one, and the first burst after a quiet spell must
// not be told to come back in a minute.
type pace struct {
	mu    sync.Mutex
	start time.Time // the first release
	last  time.Time // the latest release
	count float64   // the releases, decayed, as of last
	held  int       // slots held, counted by admitted and released
	// idleSince is when held last fell to 0; zero while slots are held.
	idleSince time.Time
}

// admitted records one slot taken at now. Ending an idle spell, it moves
// the clock of the measure past the spell, so that the spell neither
// decays the count nor widens its span.
func (p *pace) admitted(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == 0 && !p.idleSince.IsZero() && !p.start.IsZero() {
		idle := now.Sub(p.idleSince)
		p.start, p.last = p.start.Add(idle), p.last.Add(idle)
	}
	p.idleSince = time.Time{}
	p.held++
}

// released records one release at now.
func (p *pace) released(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		p.start = now
	}
	p.count = p.count*decay(now.Sub(p.last)) + 1
	p.last = now
	if p.held > 0 {
		p.held--
	}
	if p.held == 0 {
		p.idleSince = now
	}
}

// rate is the releases per second at now; 0 before the first release.
// While no slot is held it is the rate as the last slot was released.
func (p *pace) rate(now time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		return 0
	}
	if p.held == 0 && !p.idleSince.IsZero() {
		now = p.idleSince
	}
	span := max(now.Sub(p.start), paceMinSpan)
	// The weight a constant rate would have accumulated over span.
	weight := paceWindow.Seconds() * (1 - decay(span))
	return p.count * decay(now.Sub(p.last)) / weight
}

// decay is the weight of a release d old.
func decay(d time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return math.Exp(-d.Seconds() / paceWindow.Seconds())
}

// retryAfter is how long a request that finds ahead requests waiting
// before it may expect to wait for a slot, at rate releases a second:
// (ahead+1)/rate, rounded up to whole seconds and kept within
// [MinRetryAfter, MaxRetryAfter]. Before any release is measured (rate
// 0) nothing says the wait will be long: MinRetryAfter.
func retryAfter(ahead int, rate float64) time.Duration {
	if rate <= 0 {
		return MinRetryAfter
	}
	secs := math.Ceil(float64(ahead+1) / rate)
	if math.IsNaN(secs) || secs > MaxRetryAfter.Seconds() {
		return MaxRetryAfter
	}
	return max(time.Duration(secs)*time.Second, MinRetryAfter)
}

// RetryAfter is the retry hint of an overload refusal at this instant,
// when the gate paces it (Options.PaceRetryAfter): the time the requests
// waiting now, and the one refused behind them, would take to get a slot
// at the rate slots have been released, rounded up to whole seconds and
// kept within [MinRetryAfter, MaxRetryAfter]. 0 when the gate does not
// pace it: the adapter's fixed hint applies. Every protocol's refusals
// carry the same figure.
func (g *Gate) RetryAfter() time.Duration {
	if g.pace == nil {
		return 0
	}
	return retryAfter(g.ranks.Stats().Waiting, g.pace.rate(time.Now()))
}

// CountsTokens reports whether the limits in force bound tokens, so that
// an adapter should give Request.Tokens.
func (g *Gate) CountsTokens() bool { return g.ranks.CountsTokens() }
