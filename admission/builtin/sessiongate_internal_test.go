package builtin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotgate/slotgate/admission"
)

// A waiter granted a slot whose context has also ended when it looks must
// return ctx.Err() and hand the slot on: a context that ended never wins.
// Both channels are ready before await selects, so its select picks
// either at random; the rounds make a wrong branch show.
func TestAwaitEndedContextNeverWins(t *testing.T) {
	f, err := sessionGateProvider(admission.NewParameters([]byte(`{"max_active_per_session":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := f(admission.Context{})
	if err != nil {
		t.Fatal(err)
	}
	g := c.(*sessionGate)
	for i := range 100 {
		r0 := admission.NewRequest(admission.Inputs{ID: "r0", Session: "s"})
		r1 := admission.NewRequest(admission.Inputs{ID: "r1", Session: "s"})
		if err := g.Classify(context.Background(), r0); err != nil {
			t.Fatal(err)
		}
		// Queue r1 as Classify does, grant it, and end its context, all
		// before it waits.
		g.mu.Lock()
		s := g.sessions["s"]
		w := &sessionWaiter{req: r1, ready: make(chan struct{})}
		elem := s.waiters.PushBack(w)
		g.mu.Unlock()
		g.OnEvent(admission.Event{Kind: admission.Completed, Request: r0})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()

		if err := g.await(ctx, s, elem, w, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: await = %v, want context.Canceled", i, err)
		}
		if len(g.sessions) != 0 || len(g.inFlight) != 0 {
			t.Fatalf("round %d: the slot was kept: %d sessions, %d in flight", i, len(g.sessions), len(g.inFlight))
		}
	}
}
