package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

const msgSessionBusy = "Server overloaded: session busy"

func TestSessionGateParameters(t *testing.T) {
	runParamCases(t, builtin.SessionGate, []paramCase{
		{name: "required only", raw: `{"max_active_per_session":1}`},
		{name: "all", raw: `{"max_active_per_session":4,"max_wait_ms":600000,"max_sessions":1}`},
		{name: "shortest wait", raw: `{"max_active_per_session":1,"max_wait_ms":1}`},
		{name: "missing limit", raw: `{"max_wait_ms":100}`, want: "session-gate: max_active_per_session is required"},
		{name: "absent parameters", raw: ``, want: "session-gate: max_active_per_session is required"},
		{name: "zero limit", raw: `{"max_active_per_session":0}`,
			want: "session-gate: max_active_per_session must be at least 1, got 0"},
		{name: "zero wait", raw: `{"max_active_per_session":1,"max_wait_ms":0}`,
			want: "session-gate: max_wait_ms must be between 1 and 600000, got 0"},
		{name: "wait too long", raw: `{"max_active_per_session":1,"max_wait_ms":600001}`,
			want: "session-gate: max_wait_ms must be between 1 and 600000, got 600001"},
		{name: "zero waiting", raw: `{"max_active_per_session":1,"max_waiting":0}`,
			want: "session-gate: max_waiting must be at least 1, got 0"},
		{name: "zero sessions", raw: `{"max_active_per_session":1,"max_sessions":0}`,
			want: "session-gate: max_sessions must be at least 1, got 0"},
		{name: "every problem", raw: `{"max_active_per_session":-1,"max_wait_ms":-2,"max_sessions":-3}`,
			want: "session-gate: max_active_per_session must be at least 1, got -1\n" +
				"session-gate: max_wait_ms must be between 1 and 600000, got -2\n" +
				"session-gate: max_sessions must be at least 1, got -3"},
		{name: "string limit", raw: `{"max_active_per_session":"2"}`,
			contains: []string{"session-gate: ", "max_active_per_session", "string"}},
		{name: "unknown field", raw: `{"max_active_per_session":1,"max_active":1}`,
			contains: []string{"session-gate: ", `unknown field "max_active"`}},
	})
}

// gate is a session-gate under test, with helpers to script requests.
type gate struct {
	t *testing.T
	c admission.Classifier
}

func newGate(t *testing.T, raw string) *gate {
	return &gate{t: t, c: build(t, builtin.SessionGate, raw)}
}

func req(id, session string) *admission.Request {
	return admission.NewRequest(admission.Inputs{ID: id, Session: session, PolicyClass: "standard"})
}

// start classifies r on a goroutine of its own; its result arrives on the
// returned channel.
func (g *gate) start(ctx context.Context, r *admission.Request) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.c.Classify(ctx, r) }()
	return done
}

// admit classifies r, which must be admitted at once.
func (g *gate) admit(r *admission.Request) {
	g.t.Helper()
	if err := g.c.Classify(context.Background(), r); err != nil {
		g.t.Fatalf("Classify(%s) = %v, want admitted at once", r.ID(), err)
	}
}

func (g *gate) event(kind admission.EventKind, r *admission.Request) {
	g.c.OnEvent(admission.Event{Kind: kind, Request: r})
}

func (g *gate) state(want builtin.GateState) {
	g.t.Helper()
	if got := builtin.SessionGateState(g.c); got != want {
		g.t.Fatalf("state = %+v, want %+v", got, want)
	}
}

// finished reports, after synctest.Wait, whether done has a result, and
// which.
func finished(done <-chan error) (error, bool) {
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

func wantWaiting(t *testing.T, name string, done <-chan error) {
	t.Helper()
	if err, ok := finished(done); ok {
		t.Fatalf("%s finished (%v), want it waiting", name, err)
	}
}

func wantAdmitted(t *testing.T, name string, done <-chan error) {
	t.Helper()
	err, ok := finished(done)
	if !ok || err != nil {
		t.Fatalf("%s: finished %v with %v, want admitted", name, ok, err)
	}
}

func TestSessionGateLimitsEachSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":2}`)
		a1, a2, a3, b1 := req("a1", "a"), req("a2", "a"), req("a3", "a"), req("b1", "b")
		g.admit(a1)
		g.admit(a2)
		a3done := g.start(context.Background(), a3)
		synctest.Wait()
		wantWaiting(t, "a3", a3done)
		g.admit(b1) // another session is not held up by a
		g.admit(req("none", ""))
		g.state(builtin.GateState{Sessions: 2, InFlight: 3, Waiting: 1})

		g.event(admission.Completed, b1) // b's completion frees nothing of a's
		synctest.Wait()
		wantWaiting(t, "a3", a3done)
		g.event(admission.Completed, a2)
		synctest.Wait()
		wantAdmitted(t, "a3", a3done)
		g.state(builtin.GateState{Sessions: 1, InFlight: 2})
		g.event(admission.Completed, a1)
		g.event(admission.Completed, a3)
		g.state(builtin.GateState{})
	})
}

func TestSessionGateFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1}`)
		holder := req("r0", "s")
		g.admit(holder)
		var reqs []*admission.Request
		var dones []<-chan error
		for i := 1; i <= 5; i++ {
			r := req(fmt.Sprintf("r%d", i), "s")
			reqs = append(reqs, r)
			dones = append(dones, g.start(context.Background(), r))
			synctest.Wait() // so arrival order is r1, r2, …
		}
		for i, r := range reqs {
			g.event(admission.Completed, holder)
			synctest.Wait()
			wantAdmitted(t, r.ID(), dones[i])
			for j := i + 1; j < len(reqs); j++ {
				wantWaiting(t, reqs[j].ID(), dones[j])
			}
			holder = r
		}
		g.event(admission.Completed, holder)
		g.state(builtin.GateState{})
	})
}

// A newcomer that arrives right after a release, before the waiter it
// was handed to has run, must not take the slot.
func TestSessionGateNoBarging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1}`)
		r0, r1, r2 := req("r0", "s"), req("r1", "s"), req("r2", "s")
		g.admit(r0)
		r1done := g.start(context.Background(), r1)
		synctest.Wait()
		g.event(admission.Completed, r0)
		r2done := g.start(context.Background(), r2)
		synctest.Wait()
		wantAdmitted(t, "r1", r1done)
		wantWaiting(t, "r2", r2done)
		g.event(admission.Completed, r1)
		synctest.Wait()
		wantAdmitted(t, "r2", r2done)
		g.event(admission.Completed, r2)
		g.state(builtin.GateState{})
	})
}

func TestSessionGateWaiterCancelLeavesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1}`)
		r0, r1, r2 := req("r0", "s"), req("r1", "s"), req("r2", "s")
		g.admit(r0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var left time.Time
		r1done := make(chan error, 1)
		go func() {
			err := g.c.Classify(ctx, r1)
			left = time.Now()
			r1done <- err
		}()
		synctest.Wait()
		r2done := g.start(context.Background(), r2)
		synctest.Wait()

		cancelled := time.Now()
		cancel()
		synctest.Wait()
		if err, ok := finished(r1done); !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("r1: finished %v with %v, want context.Canceled", ok, err)
		}
		if !left.Equal(cancelled) {
			t.Errorf("r1 left %v after its cancel", left.Sub(cancelled))
		}
		wantWaiting(t, "r2", r2done)
		g.state(builtin.GateState{Sessions: 1, InFlight: 1, Waiting: 1})

		// r1 held nothing: its events are ignored, and r2 goes next.
		g.event(admission.Aborted, r1)
		synctest.Wait()
		wantWaiting(t, "r2", r2done)
		g.event(admission.Completed, r0)
		synctest.Wait()
		wantAdmitted(t, "r2", r2done)
		g.event(admission.Completed, r2)
		g.state(builtin.GateState{})
	})
}

// Regression: a waiter whose context ends as a slot is released must not
// keep the slot; it goes to the next waiter. Which of the two the gate
// sees first is up to the scheduler, so the race is run many times.
func TestSessionGateCancelRacingGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1}`)
		for i := range 100 {
			r0, r1, r2 := req("r0", "s"), req("r1", "s"), req("r2", "s")
			g.admit(r0)
			ctx, cancel := context.WithCancel(context.Background())
			r1done := g.start(ctx, r1)
			synctest.Wait()
			r2done := g.start(context.Background(), r2)
			synctest.Wait()

			// The cancel wakes r1; the release may hand r1 the slot before
			// r1 runs, or go to r2 after r1 has left. Either way r1 leaves
			// with context.Canceled and r2 ends up with the slot.
			cancel()
			g.event(admission.Completed, r0)
			synctest.Wait()
			if err, ok := finished(r1done); !ok || !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: r1 finished %v with %v, want context.Canceled", i, ok, err)
			}
			wantAdmitted(t, "r2", r2done)
			g.state(builtin.GateState{Sessions: 1, InFlight: 1})
			g.event(admission.Completed, r2)
			g.state(builtin.GateState{})
		}
	})
}

func TestSessionGateWaitBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want time.Duration
	}{
		{name: "default", raw: `{"max_active_per_session":1}`, want: 30 * time.Second},
		{name: "configured", raw: `{"max_active_per_session":1,"max_wait_ms":250}`, want: 250 * time.Millisecond},
		{name: "shortest", raw: `{"max_active_per_session":1,"max_wait_ms":1}`, want: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate(t, tc.raw)
				r0, r1 := req("r0", "s"), req("r1", "s")
				g.admit(r0)
				start := time.Now()
				err := g.c.Classify(context.Background(), r1)
				if waited := time.Since(start); waited != tc.want {
					t.Errorf("rejected after %v, want exactly %v", waited, tc.want)
				}
				wantRejection(t, err, admission.CapacityExhausted, msgSessionBusy)
				g.state(builtin.GateState{Sessions: 1, InFlight: 1})
				g.event(admission.Completed, r1) // not admitted: ignored
				g.state(builtin.GateState{Sessions: 1, InFlight: 1})
				g.event(admission.Completed, r0)
				g.state(builtin.GateState{})
			})
		})
	}
}

// The budget counts from each waiter's own Classify, not from the
// session's first waiter.
func TestSessionGateWaitBudgetIsPerWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1,"max_wait_ms":1000}`)
		g.admit(req("r0", "s"))
		r1done := g.start(context.Background(), req("r1", "s"))
		time.Sleep(600 * time.Millisecond) // fake time: the bubble's clock
		r2done := g.start(context.Background(), req("r2", "s"))
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		wantRejection(t, <-r1done, admission.CapacityExhausted, msgSessionBusy)
		wantWaiting(t, "r2", r2done)
		time.Sleep(600 * time.Millisecond)
		synctest.Wait()
		wantRejection(t, <-r2done, admission.CapacityExhausted, msgSessionBusy)
	})
}

func TestSessionGateAbortedReleasesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1}`)
		r0, r1, r2 := req("r0", "s"), req("r1", "s"), req("r2", "s")
		g.admit(r0)
		g.event(admission.Sent, r0)
		r1done := g.start(context.Background(), r1)
		synctest.Wait()
		g.c.OnEvent(admission.Event{Kind: admission.Aborted, Request: r0, Reason: admission.AbortFailed})
		synctest.Wait()
		wantAdmitted(t, "r1", r1done)

		r2done := g.start(context.Background(), r2)
		synctest.Wait()
		g.event(admission.Completed, r0) // a second end of r0: ignored
		g.event(admission.Aborted, r0)
		g.event(admission.Sent, r1) // not an end
		g.event(admission.Responding, r1)
		g.c.OnEvent(admission.Event{Kind: admission.Completed}) // no request
		synctest.Wait()
		wantWaiting(t, "r2", r2done)
		g.state(builtin.GateState{Sessions: 1, InFlight: 1, Waiting: 1})

		g.c.OnEvent(admission.Event{Kind: admission.Aborted, Request: r1, Reason: admission.AbortCancelled})
		synctest.Wait()
		wantAdmitted(t, "r2", r2done)
		g.event(admission.Aborted, r2)
		g.state(builtin.GateState{})
	})
}

func TestSessionGateMaxSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1,"max_sessions":2}`)
		a, b := req("a", "a"), req("b", "b")
		g.admit(a)
		g.admit(b)
		b2 := req("b2", "b")
		bWait := g.start(context.Background(), b2) // known session: waits
		err := g.c.Classify(context.Background(), req("c", "c"))
		wantRejection(t, err, admission.CapacityExhausted, "Server overloaded: too many active sessions")
		g.admit(req("none", "")) // no session: not counted
		synctest.Wait()
		wantWaiting(t, "b2", bWait)
		g.state(builtin.GateState{Sessions: 2, InFlight: 2, Waiting: 1})

		g.event(admission.Completed, a) // a is freed, so c fits
		c := req("c", "c")
		g.admit(c)
		g.state(builtin.GateState{Sessions: 2, InFlight: 2, Waiting: 1})
		g.event(admission.Completed, b)
		synctest.Wait()
		wantAdmitted(t, "b2", bWait)
		g.event(admission.Completed, c)
		g.state(builtin.GateState{Sessions: 1, InFlight: 1})
		g.event(admission.Completed, b2)
		g.state(builtin.GateState{})
	})
}

// TestSessionGateMaxWaiting: the waiters of all sessions together are
// bounded; one more that would wait is rejected at once, and places free
// when waiters leave.
func TestSessionGateMaxWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(t, `{"max_active_per_session":1,"max_waiting":2}`)
		g.admit(req("holder", "s"))
		ctx, cancel := context.WithCancel(t.Context())
		waiters := []<-chan error{g.start(ctx, req("w1", "s")), g.start(ctx, req("w2", "s"))}
		synctest.Wait()
		err := g.c.Classify(t.Context(), req("third", "s"))
		if rej := admission.AsRejection(err); err == nil || !strings.Contains(rej.Message, "too many requests waiting") {
			t.Errorf("a third waiter: %v, want the too-many-waiting rejection", err)
		}
		g.state(builtin.GateState{Sessions: 1, InFlight: 1, Waiting: 2})
		cancel()
		for _, w := range waiters {
			<-w
		}
		g.state(builtin.GateState{Sessions: 1, InFlight: 1})
	})
}
