package gate

import "github.com/slotgate/slotgate/limiter"

// RefuseAtOnce decides for an adapter that can neither hold a slot nor
// wait where it stands (slotgate's HTTP/1.1 front end, before net/http
// has the request) whether the gate refuses the request of ex now, as
// Admit would: draining, busy, or the limiter's queue full. On true the
// exchange has its refusal outcome, counted as Admit counts it, and the
// adapter answers it and ends it with Finish. On false nothing changed,
// and the request goes to Admit as usual.
//
// It decides only for the gate whose refusals depend on nothing but its
// own state: no Policy (a classifier reads the request), one limiter for
// the engine (limits per rank read the request's rank) and no token
// limit (those count the request's prompt). Otherwise it returns false.
func (g *Gate) RefuseAtOnce(ex *Exchange) bool {
	if g.policy != nil || g.ranks.PerRank() || g.ranks.CountsTokens() {
		return false
	}
	ex.g, ex.Class, ex.Rank = g, g.class, Unpinned
	switch {
	case g.draining.Load():
		refuse(ex, RejectedDraining)
		return true
	case g.busy != nil && g.busy():
		refuse(ex, RejectedBusy)
		return true
	}
	lim, _, _ := g.ranks.pick(false, Unpinned)
	err := lim.Refuses(limiter.Request{})
	if err == nil {
		return false
	}
	g.obs.Received()
	g.decided(g.refuseAcquire(ex, err, nil, false), ex)
	return true
}
