package builtin

import "github.com/slotgate/slotgate/admission"

// GateState is a session-gate's bookkeeping, for tests.
type GateState struct {
	Sessions int // sessions tracked
	InFlight int // admitted requests not yet completed or aborted
	Waiting  int // requests waiting, all sessions together
}

// SessionGateState returns c's bookkeeping; c must be a session-gate.
func SessionGateState(c admission.Classifier) GateState {
	g := c.(*sessionGate)
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GateState{Sessions: len(g.sessions), InFlight: len(g.inFlight)}
	for _, s := range g.sessions {
		st.Waiting += s.waiters.Len()
	}
	return st
}
