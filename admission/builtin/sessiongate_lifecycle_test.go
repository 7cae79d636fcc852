package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

// Many requests of a few sessions, some cancelled while they wait or just
// as they are admitted, each admitted one ending with Completed or
// Aborted in lifecycle order: the limit holds throughout, every waiter
// returns, and all state is freed. synctest.Test fails if a goroutine is
// left blocked; run it with -race.
func TestSessionGateLifecycleUnderConcurrentCancel(t *testing.T) {
	const (
		sessions = 4
		limit    = 2
		perSess  = 100
	)
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, fmt.Sprintf(`{"max_active_per_session":%d,"max_waiting":100000}`, limit))
		var inFlight [sessions]atomic.Int32
		var admitted, cancelled, over atomic.Int32
		var wg sync.WaitGroup
		for i := range sessions * perSess {
			s := i % sessions
			wg.Go(func() {
				r := req(fmt.Sprintf("r%d", i), fmt.Sprintf("s%d", s))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if i%3 == 0 {
					go cancel() // races with Classify
				}
				if err := g.c.Classify(ctx, r); err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: Classify = %v, want nil or context.Canceled", r.ID(), err)
					}
					cancelled.Add(1)
					g.event(admission.Aborted, r) // not admitted: ignored
					return
				}
				admitted.Add(1)
				if n := inFlight[s].Add(1); n > limit {
					over.Add(1)
				}
				g.event(admission.Sent, r)
				runtime.Gosched()
				g.event(admission.Responding, r)
				inFlight[s].Add(-1) // before the end releases the slot
				if i%2 == 0 {
					g.event(admission.Completed, r)
				} else {
					g.c.OnEvent(admission.Event{Kind: admission.Aborted, Request: r, Reason: admission.AbortCancelled})
				}
				g.event(admission.Completed, r) // a repeated end: ignored
			})
		}
		wg.Wait()
		if over.Load() > 0 {
			t.Errorf("a session had more than %d in flight %d times", limit, over.Load())
		}
		if admitted.Load()+cancelled.Load() != sessions*perSess || admitted.Load() == 0 {
			t.Errorf("admitted %d + cancelled %d, want %d in all", admitted.Load(), cancelled.Load(), sessions*perSess)
		}
		g.state(builtin.GateState{})
	})
}
