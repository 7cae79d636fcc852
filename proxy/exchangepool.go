package proxy

import "sync"

// exchanges holds the exchanges of early requests that ended on the
// front end (answered or refused there), for the next early request: a
// served request's exchange is most of a kilobyte, about half of what a
// plain request allocates, and under the fast path's load its garbage set
// the collector's pace (BENCHMARKS.md).
//
// An exchange comes back only from the places where nothing can hold it
// any more: its slot released (gate.Finish), its access-log line written
// (the line copies its values), its engine exchange closed (the Cut
// unwatched), its answer written. A stream's lent to the relay comes
// back at the stream's end, when all of that holds (relayed.giveBack).
// One handed on to net/http or parked is never given back: its owner
// ends it later, and the collector frees it.
type exchanges struct{ pool sync.Pool }

// take returns a zeroed exchange of p's.
func (e *exchanges) take(p *Proxy) *exchange {
	ex, _ := e.pool.Get().(*exchange)
	if ex == nil {
		ex = new(exchange)
	}
	ex.p = p
	ex.out.ex, ex.watch.ex = ex, ex
	return ex
}

// give zeroes ex and keeps it for the next take.
func (e *exchanges) give(ex *exchange) {
	*ex = exchange{}
	e.pool.Put(ex)
}
