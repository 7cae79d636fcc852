package limiter

import "sync/atomic"

// Permit is one admitted request's hold on the limiter: its slot (under
// N) until Release, and its waiting place (under W) and its prompt tokens
// (under P) until FirstToken or Release, whichever comes first. Both methods are safe to call more than
// once and from any goroutine; only the first call of each does anything.
type Permit struct {
	l *Limiter
	// tokens are the prompt tokens the request holds in prefill, fixed at
	// admission.
	tokens int64
	// released and prefilled are set by the first Release and the first of
	// FirstToken or Release; whoever sets prefilled frees the waiting
	// place, so it is freed exactly once. prefilled is set under the
	// limiter's lock, in the step that frees the place: were it set before
	// the lock, a Release running in between would free the slot but not
	// the place, and the limiter would count, for an instant, more requests
	// before their first token than it admits.
	released, prefilled atomic.Bool
}

// FirstToken frees the request's waiting place and its prompt tokens: its
// first generated token has arrived (or its answer ended without one). The
// waiters that the freed room lets in are admitted at once.
func (p *Permit) FirstToken() {
	if p.prefilled.Load() {
		return // the usual repeated call: no lock
	}
	p.l.mu.Lock()
	if !p.prefilled.Swap(true) {
		p.l.firstTokenLocked(p.tokens)
	}
	p.l.mu.Unlock()
}

// Release frees the request's slot, and its waiting place and tokens if
// FirstToken has not. The freed room passes directly to the next waiters, so that no
// newcomer can take it first.
func (p *Permit) Release() {
	if p.released.Swap(true) {
		return
	}
	p.l.mu.Lock()
	p.l.releaseLocked(!p.prefilled.Swap(true), p.tokens)
	p.l.mu.Unlock()
}

// Tokens returns the prompt tokens the request holds in prefill from its
// admission until FirstToken or Release: Request.Tokens, or its
// TokenCount as it stood at the grant, within [0, 2^40].
func (p *Permit) Tokens() int64 { return p.tokens }
