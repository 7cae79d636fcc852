package gate

import (
	"github.com/slotgate/slotgate/limiter"
)

// RefuseAtOnce decides for an adapter that can neither hold a slot nor
// wait where it stands (slotgate's HTTP/1.1 front end, before net/http
// has the request) whether the gate refuses the request of ex now, as
// Admit would: draining, busy, or the limiter's queue full. On true the
// exchange has its refusal outcome, counted as Admit counts it, and the
// adapter answers it and ends it with Finish. On false nothing changed,
// and the request goes to Admit as usual.
//
// The request is one pinned to no rank, whose prompt is not yet
// counted. So it decides only what does not depend on the request: under
// a Policy, only draining and busy, which Admit decides before the
// classifier reads the request; with limits per rank, on the rank with
// the most room, as Admit places an unpinned request; and under a token
// limit, only the refusals that hold whatever the prompt's tokens
// (limiter.Refuses asked with none). Otherwise it returns false.
func (g *Gate) RefuseAtOnce(ex *Exchange) bool {
	if g.arrive(ex, Request{}) {
		return true
	}
	if g.policy != nil {
		return false // the classifier reads the request before the limiter
	}
	lim, rank, _ := g.ranks.pick(false, Unpinned)
	err := lim.Refuses(limiter.Request{})
	if err == nil {
		return false
	}
	ex.Rank = rank
	g.obs.Received()
	g.decided(g.refuseAcquire(ex, err, nil, false), ex)
	return true
}

// AdmitAtOnce decides for an adapter that serves a request before its
// server reads it (slotgate's HTTP/1.1 front end, for a plain request
// that came whole) whether the request is admitted or refused now, as
// Admit would decide it at arrival. done false means the gate could not
// decide at once: the request would wait in the queue, or the gate would
// have to read it first (an admission policy, limits per rank, a token
// limit); then the gate changed nothing but this: a request that would
// wait holds its place in the queue (held, limiter.TryReserve), so that
// the requests that arrive while it goes to Admit are refused at once, as
// they would be once it waits. The request goes to Admit as usual, with
// an exchange of its own (ex is dropped) and held (Request.Held), which
// the request takes if it waits and Admit gives back otherwise; an
// adapter that drops the request releases held itself.
// On done, the exchange is admitted (d.Admitted, holding a slot) or has
// its refusal outcome, counted as Admit counts it; either way the adapter
// ends it with Finish.
func (g *Gate) AdmitAtOnce(ex *Exchange) (d Decision, held *limiter.Reservation, done bool) {
	if g.policy != nil || g.ranks.ranked || g.ranks.CountsTokens() {
		return Decision{}, nil, false
	}
	if g.arrive(ex, Request{}) {
		return Decision{}, nil, true
	}
	lim, rank, _ := g.ranks.pick(false, Unpinned)
	p, held, err := lim.TryReserve(limiter.Request{})
	if held != nil {
		return Decision{}, held, false
	}
	ex.Rank = rank
	g.obs.Received()
	if err != nil {
		return g.decided(g.refuseAcquire(ex, err, nil, false), ex), nil, true
	}
	return g.decided(g.grant(ex, p), ex), nil, true
}

// ParkAtOnce parks the request of ex, which AdmitAtOnce found would wait
// and whose queue place held is, for an adapter that holds the request
// off its goroutine already (slotgate's HTTP/1.1 front end, which kept
// the request's bytes): pk's Park is not called. The request waits as
// Admit would park it, and its decision goes to pk.Resume, on this
// goroutine when the gate decides at once (a slot freed, or the gate
// began draining or found the engine busy since AdmitAtOnce: the
// exchange has its refusal outcome then, as from Admit). The caller does
// nothing more with ex.
func (g *Gate) ParkAtOnce(ex *Exchange, pk Parker, held *limiter.Reservation) {
	if g.arrive(ex, Request{}) {
		held.Release()
		pk.Resume(Decision{})
		return
	}
	lim, rank, _ := g.ranks.pick(false, Unpinned)
	ex.Rank = rank
	g.obs.Received()
	g.park(lim, ex, pk, limiter.Request{Held: held}, false)
}
