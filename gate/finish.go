package gate

import (
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// DefaultAbortGrace is how long, unless Options.AbortGrace says otherwise,
// the slot of a request whose client left while the engine was serving it
// stays taken before it is handed on. The
// engine needs a moment to see the abort (vLLM frees the request at its
// next step), so handing the slot on at once would let it run N+1
// requests; and clients that die together (a client process killed with
// many requests) close their sockets over a few hundred microseconds,
// which the queued ones' grants must not outrun (see Watch.Gone).
const DefaultAbortGrace = 5 * time.Millisecond

// Finish ends an exchange: its flight ends, its slot is released (after
// the abort grace when clientGone says its client left while it ran and
// the engine had not finished it, see EngineDone), the
// classifier hears Completed or Aborted, and the request is reported to
// the Observer once. A passthrough exchange only has its flight ended.
// Nothing of the exchange may be used by the gate afterwards; the adapter
// may still read its fields.
func (g *Gate) Finish(ex *Exchange, clientGone bool) {
	g.endEngineSide(ex, clientGone)
	if ex.Outcome == Passthrough {
		return
	}
	if !ex.engineFinished {
		g.changed() // the slot or queue place is free by now
	}
	g.report(ex)
}

// EngineFinished ends, ahead of Finish, what the engine's side of an
// exchange whose answer the engine has ended (EngineDone) holds: its
// flight, its slot, and its lifecycle (the classifier hears Completed).
// It is for an adapter that writes the answer's end itself after the
// engine's (the stream relay), so that a client that has read its answer
// finds its slot free, and its session's place under a policy, as on a
// path whose Finish comes before the answer's last bytes go out. Finish
// then reports the request, and neither releases nor tells Changed again.
// It runs on the goroutine that calls Finish.
func (g *Gate) EngineFinished(ex *Exchange) {
	ex.engineDone, ex.engineFinished = true, true
	if g.endEngineSide(ex, false) {
		g.changed()
	}
}

// endEngineSide ends what ex holds while the engine serves it, each part
// once (a second call finds none left): its flight, its slot (after the
// abort grace when clientGone says its client left while the engine had
// not finished it, see EngineDone), and its lifecycle, whose classifier
// hears Completed or Aborted (a passthrough exchange was never
// classified). It reports whether it released a slot.
func (g *Gate) endEngineSide(ex *Exchange, clientGone bool) (released bool) {
	if ex.flight != nil {
		ex.flight.End() // a second End does nothing
	}
	if ex.permit != nil {
		g.releaseSlot(ex.permit, clientGone && !ex.engineDone)
		ex.permit = nil
		released = true
	}
	g.endLifecycle(ex)
	ex.adm = nil
	return released
}

// releaseSlot releases a slot: at once, or after the abort grace when its
// client left while it ran.
func (g *Gate) releaseSlot(p *limiter.Permit, clientGone bool) {
	if clientGone && g.grace > 0 {
		time.AfterFunc(g.grace, func() { g.release(p); g.changed() })
		return
	}
	g.release(p)
}

// release releases p's slot, and counts the release in the engine's pace
// when the retry hint follows it.
func (g *Gate) release(p *limiter.Permit) {
	p.Release()
	if g.pace != nil {
		g.pace.released(time.Now())
	}
}

// report gives the Observer the request's outcome (with its class and
// protocol), its queue wait and its time to first byte.
func (g *Gate) report(ex *Exchange) {
	g.obs.RequestDone(string(ex.Outcome), ex.Class, string(ex.Protocol))
	if ex.admitted || ex.Queued {
		g.obs.QueueWait(ex.Class, ex.QueueWait.Seconds())
	}
	if !ex.FirstByte.IsZero() && ex.Outcome.served() {
		g.obs.FirstByte(ex.FirstByte.Sub(ex.Start).Seconds())
	}
}
