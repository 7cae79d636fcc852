package sim

import (
	"context"
	"sync/atomic"
)

// A generation request is "in flight" at the APIs (HTTP completions and
// chat completions, gRPC Generate) from the moment its handler starts
// until the handler returns or the request's context is done, whichever
// comes first. The context matters: a client that went away stops
// counting the instant net/http or gRPC notices and cancels the context,
// not when the handler next writes, so the count is the concurrency a
// proxy in front really leaves the engine. The count and its high-water
// mark change under one lock, as the count before the first token does,
// so the peak is exact, not sampled.

// trackInFlight counts one request in flight until the returned end is
// called or ctx is done, whichever comes first; the caller must call end,
// typically deferred. The request leaves the count exactly once.
func (e *Engine) trackInFlight(ctx context.Context) (end func()) {
	e.inFlight.add(1)
	var left atomic.Bool
	leave := func() {
		if left.CompareAndSwap(false, true) {
			e.inFlight.add(-1)
		}
	}
	// AfterFunc runs leave in a goroutine of its own when ctx is done;
	// stop keeps it from starting after end. If it has started already,
	// the CompareAndSwap lets only one of the two count the departure, and
	// end's leave has counted it by the time end returns.
	stop := context.AfterFunc(ctx, leave)
	return func() {
		stop()
		leave()
	}
}
