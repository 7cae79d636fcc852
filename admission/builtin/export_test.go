package builtin

import (
	"fmt"

	"github.com/slotgate/slotgate/admission"
)

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
	if st.Waiting != g.waiting {
		panic(fmt.Sprintf("session-gate counts %d waiters, its sessions hold %d", g.waiting, st.Waiting))
	}
	return st
}
