package gate_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/testlog"
	"github.com/slotgate/slotgate/limiter"
)

// TestParkedPanic: a panic as a parked request resumes, on the limiter's
// goroutine where nobody else would recover it, ends neither the process
// (the test binary would die) nor the other requests. It is logged with
// its stack; before the Parker had its decision, the slot granted is
// handed on and the Parker is refused (engine_error) instead; in the
// Parker's own Resume, the exchange is the adapter's to end. Either way
// the Observer hears one decision.
func TestParkedPanic(t *testing.T) {
	tests := []struct {
		name        string
		panicIn     string
		want        gate.Outcome
		resumed     bool // the Parker got a decision
		holdingLeft int  // slots held once the panic passed
		calls       []string
	}{
		{name: "in Unwatch, before the decision", panicIn: "unwatch", want: gate.EngineError, resumed: true,
			calls: []string{"park", "watch", "unwatch", "resume"}},
		{name: "in the Parker's Resume", panicIn: "resume", want: gate.AdmittedQueued, holdingLeft: 1,
			calls: []string{"park", "watch", "unwatch", "resume"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logged := testlog.New()
				g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, func(o *gate.Options) {
					o.Logger = slog.New(slog.NewTextHandler(logged, nil))
				})
				var holder, waiter gate.Exchange
				waiter.ID = "parked-1"
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
					t.Fatalf("holder: %+v", d)
				}
				pk := newParker()
				pk.panicIn = tc.panicIn
				if d := g.Admit(context.Background(), &waiter, gate.Request{Park: pk}); !d.Parked {
					t.Fatalf("the waiter was not parked: %+v", d)
				}
				g.Finish(&holder, false) // grants the waiter, on the limiter's goroutine
				synctest.Wait()
				var d gate.Decision
				select {
				case d = <-pk.resumed:
					if !tc.resumed {
						t.Fatalf("resumed with %+v, want no decision (Resume panicked)", d)
					}
				default:
					if tc.resumed {
						t.Fatal("the Parker was never resumed")
					}
				}
				if d.Admitted || waiter.Outcome != tc.want {
					t.Errorf("decision %+v, outcome %s; want refused, %s", d, waiter.Outcome, tc.want)
				}
				if got := pk.got(); !slices.Equal(got, tc.calls) {
					t.Errorf("parker calls %v, want %v", got, tc.calls)
				}
				if s := lim.Stats(); s.Holding != tc.holdingLeft || s.Waiting != 0 {
					t.Errorf("after the panic: holding %d, waiting %d; want %d, 0", s.Holding, s.Waiting, tc.holdingLeft)
				}
				out := logged.String()
				for _, want := range []string{"parked request panicked", "request_id=parked-1", "parker: " + tc.panicIn + " broke", "goroutine"} {
					if !strings.Contains(out, want) {
						t.Errorf("the log lacks %q:\n%s", want, out)
					}
				}
				g.Finish(&waiter, false)
				if s := lim.Stats(); s.Holding != 0 {
					t.Errorf("after the waiter finished: holding %d", s.Holding)
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if want := []string{"admitted_direct", string(tc.want)}; !slices.Equal(obs.decided, want) {
					t.Errorf("decided %v, want %v", obs.decided, want)
				}
			})
		})
	}
}
