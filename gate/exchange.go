package gate

import (
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
)

// Exchange is one request's life through slotgate, whatever its protocol:
// every fact admission and the lifecycle know about it. A protocol
// adapter makes one per request (embedding it saves an allocation), sets
// ID, Start and Protocol, and takes it through Admit, Send and Finish. It
// is used by the request's goroutine, except where a method says
// otherwise.
type Exchange struct {
	// ID is the request's id, for logs, the engine and the classifier.
	ID string
	// Start is when the request arrived.
	Start time.Time
	// Protocol is the protocol the request came by, for the metrics: one
	// of Protocols, set by the adapter.
	Protocol Protocol
	// Class is the request's policy class, for the metrics: set by Admit.
	Class string
	// Outcome is how the request ended; set by Admit, and by the adapter
	// when forwarding fails (Fail).
	Outcome Outcome
	// Queued is set when the request waited in the limiter's queue.
	Queued bool
	// QueueWait is how long it waited: in the queue, or deferred by its
	// classifier.
	QueueWait time.Duration
	// FirstByte is when the first byte of the answer went to the client;
	// zero until then. The adapter sets it.
	FirstByte time.Time
	// Rank is the data-parallel rank the request is pinned to, Unpinned
	// if none; with limits per rank, the rank Admit chose.
	Rank int

	g        *Gate
	admitted bool               // it held a slot
	permit   *limiter.Permit    // its slot and waiting place, until Finish
	adm      *admission.Request // as the classifier saw it; nil unclassified
	flight   *inflight.Flight   // its load, from Send to Finish; nil untracked
	prompt   atomic.Int64       // the prompt estimate, for the context size
	// engineDone: the engine's answer reached its end, so the engine is
	// done with the request and the abort grace is not needed.
	engineDone bool
	// engineFinished: EngineFinished ended the engine's side and told
	// Changed, so Finish has no change of its own to tell.
	engineFinished bool
}

// Fail records how a request that was admitted failed on its way to or
// from the engine. A passthrough exchange keeps its outcome.
func (ex *Exchange) Fail(o Outcome) {
	if ex.Outcome != Passthrough {
		ex.Outcome = o
	}
}

// BeginFlight starts counting the load of an admitted request on its
// Rank (when Unpinned, the engine chooses): from here to Finish, its
// prompt and generated tokens count in slotgate's own view of the load.
func (ex *Exchange) BeginFlight() {
	if ex.g != nil && ex.g.flights != nil && ex.admitted {
		ex.flight = ex.g.flights.Begin(ex.Rank)
	}
}

// Sent marks the request sent to the engine: the classifier hears Sent.
func (ex *Exchange) Sent() {
	if ex.g != nil { // a passthrough exchange never met the gate
		ex.g.event(ex, admission.Sent)
	}
}

// Counting reports whether the adapter should follow the answer for its
// first token (Prefilled) and count its tokens (SetPrompt, SetGenerated):
// the request is tracked in the load, or holds a waiting place.
func (ex *Exchange) Counting() bool { return ex.flight != nil || ex.permit != nil }

// SetPrompt gives the prompt estimate, in tokens, to the flight and keeps
// it for the context size. It may run on another goroutine (the one
// sending the body).
func (ex *Exchange) SetPrompt(tokens int) {
	if ex.flight == nil {
		return
	}
	ex.flight.SetPrompt(tokens)
	ex.prompt.Store(int64(tokens))
}

// Responding marks the head of the engine's answer received; the
// classifier hears Responding.
func (ex *Exchange) Responding() {
	if ex.g != nil {
		ex.g.event(ex, admission.Responding)
	}
}

// Prefilled marks the end of the request's prefill: its first token, or
// an answer that brings none. Its waiting place is released, which may
// admit the next waiter. It may be called more than once.
func (ex *Exchange) Prefilled() {
	// The permit first: the flight's change tells the load hub, which
	// then reads the limiter's count of requests in prefill.
	if ex.permit != nil {
		ex.permit.FirstToken()
	}
	if ex.flight != nil {
		ex.flight.Prefilled()
	}
}

// EngineDone marks the engine's answer read to its end (the end of its
// body, its trailers): the engine has finished the request, so its slot
// is handed on at Finish without the abort grace, even when the client
// left meanwhile.
func (ex *Exchange) EngineDone() { ex.engineDone = true }

// SetGenerated gives the number of tokens generated so far.
func (ex *Exchange) SetGenerated(n int) {
	if ex.flight == nil {
		return
	}
	ex.flight.SetGenerated(n)
	if ex.adm != nil {
		ex.adm.SetContextTokens(int(ex.prompt.Load()) + n)
	}
}
