package gate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// graceOver is past the gate's 5 ms abort grace, for sleeps in a bubble.
const graceOver = 10 * time.Millisecond

// admitAsync runs Admit on a goroutine of its own; the decision arrives
// on the channel, and ex may be read once it has.
func admitAsync(ctx context.Context, g *gate.Gate, ex *gate.Exchange, req gate.Request) <-chan gate.Decision {
	ch := make(chan gate.Decision, 1)
	go func() { ch <- g.Admit(ctx, ex, req) }()
	return ch
}

// decided waits for the bubble to be quiet and reports whether Admit has
// returned, with its decision.
func decided(ch <-chan gate.Decision) (gate.Decision, bool) {
	synctest.Wait()
	select {
	case d := <-ch:
		return d, true
	default:
		return gate.Decision{}, false
	}
}

// places is the part of limiter stats that tells who holds what.
type places struct{ holding, prefilling, waiting int }

func placesOf(s limiter.Stats) places { return places{s.Holding, s.Prefilling, s.Waiting} }

// TestWaitingPlace: with room under N, a request waits only for W, and its
// holder's first token (Prefilled) lets it in; Prefilled twice frees one
// place; Finish frees the slot and, without a first token, the waiting
// place too, after the abort grace when the client left.
func TestWaitingPlace(t *testing.T) {
	roomy := limiter.Options{Slots: 8, WaitingLimit: 1, QueueLen: 2}
	tests := []struct {
		name   string
		limits limiter.Options
		// end is what the holder does; finished says it called Finish.
		end      func(g *gate.Gate, ex *gate.Exchange)
		finished bool
		// grace says the holder's client left: nothing is freed before
		// the abort grace.
		grace bool
		// admits says the waiter is admitted by end; want is the places
		// then.
		admits bool
		want   places
	}{
		{name: "first token", limits: roomy, end: func(_ *gate.Gate, ex *gate.Exchange) { ex.Prefilled() },
			admits: true, want: places{2, 1, 0}},
		{name: "first token twice", limits: roomy,
			end:    func(_ *gate.Gate, ex *gate.Exchange) { ex.Prefilled(); ex.Prefilled() },
			admits: true, want: places{2, 1, 0}},
		{name: "finish without a first token", limits: roomy,
			end: func(g *gate.Gate, ex *gate.Exchange) { g.Finish(ex, false) }, finished: true,
			admits: true, want: places{1, 1, 0}},
		{name: "finish after the first token", limits: roomy,
			end: func(g *gate.Gate, ex *gate.Exchange) { ex.Prefilled(); g.Finish(ex, false) }, finished: true,
			admits: true, want: places{1, 1, 0}},
		{name: "client gone before the first token", limits: roomy,
			end: func(g *gate.Gate, ex *gate.Exchange) { g.Finish(ex, true) }, finished: true, grace: true,
			admits: true, want: places{1, 1, 0}},
		{name: "first token under a full N", limits: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 2},
			end:  func(_ *gate.Gate, ex *gate.Exchange) { ex.Prefilled() },
			want: places{1, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, obs := newGate(t, tc.limits, nil)
				var holder, waiter gate.Exchange
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted || holder.Outcome != gate.AdmittedDirect {
					t.Fatalf("holder: %+v, %s; want admitted_direct", d, holder.Outcome)
				}
				if !holder.Counting() {
					t.Error("an admitted exchange without flights is not Counting")
				}
				ch := admitAsync(context.Background(), g, &waiter, gate.Request{})
				if _, ok := decided(ch); ok {
					t.Fatal("the waiter was admitted while W was full")
				}
				if got := placesOf(lim.Stats()); got != (places{1, 1, 1}) {
					t.Fatalf("before the holder's end: %+v, want 1 holding, 1 prefilling, 1 waiting", got)
				}

				tc.end(g, &holder)
				if tc.grace {
					if _, ok := decided(ch); ok {
						t.Fatal("the waiter was admitted within the abort grace")
					}
					if got := placesOf(lim.Stats()); got != (places{1, 1, 1}) {
						t.Fatalf("within the abort grace: %+v, want the holder's places kept", got)
					}
					time.Sleep(graceOver)
				}
				d, ok := decided(ch)
				if ok != tc.admits {
					t.Fatalf("waiter decided %v, want %v", ok, tc.admits)
				}
				if got := placesOf(lim.Stats()); got != tc.want {
					t.Errorf("after the holder's end: %+v, want %+v", got, tc.want)
				}

				if !tc.finished {
					g.Finish(&holder, false)
				}
				if holder.Counting() {
					t.Error("a finished exchange is still Counting")
				}
				if !ok {
					d = <-ch
				}
				if !d.Admitted || waiter.Outcome != gate.AdmittedQueued || !waiter.Counting() {
					t.Fatalf("waiter: %+v, %s, counting %v; want admitted_queued, counting", d, waiter.Outcome, waiter.Counting())
				}
				g.Finish(&waiter, false)
				time.Sleep(graceOver)
				if got := placesOf(lim.Stats()); got != (places{}) {
					t.Errorf("after both finished: %+v, want nothing held", got)
				}
				obs.mu.Lock()
				got := slices.Clone(obs.decided)
				obs.mu.Unlock()
				if want := []string{"admitted_direct", "admitted_queued"}; !slices.Equal(got, want) {
					t.Errorf("decided %q, want %q", got, want)
				}
			})
		})
	}
}

// TestCountingWithoutFlights: an exchange is Counting exactly while it
// holds a permit, though the gate tracks no flights.
func TestCountingWithoutFlights(t *testing.T) {
	tests := []struct {
		name   string
		limits limiter.Options
		full   bool // a slot is held outside the gate
		drain  bool
		want   bool
	}{
		{name: "admitted", limits: limiter.Options{Slots: 1, WaitingLimit: 1}, want: true},
		{name: "admitted, W only", limits: limiter.Options{WaitingLimit: 1}, want: true},
		{name: "refused for capacity", limits: limiter.Options{Slots: 1}, full: true},
		{name: "refused while draining", limits: limiter.Options{Slots: 1}, drain: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, lim, _ := newGate(t, tc.limits, nil)
			if tc.full {
				p, err := lim.TryAcquire(limiter.Request{})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Release()
			}
			if tc.drain {
				g.StartDraining()
			}
			var ex gate.Exchange
			g.Admit(context.Background(), &ex, gate.Request{})
			if got := ex.Counting(); got != tc.want {
				t.Errorf("Counting = %v after %s, want %v", got, ex.Outcome, tc.want)
			}
			ex.Prefilled() // harmless whatever the exchange holds
			g.Finish(&ex, false)
			if ex.Counting() {
				t.Error("Counting after Finish")
			}
		})
	}
}

// events records, in order, the Observer's Received and Decided calls.
type events struct {
	gate.Observer // the rest, discarded
	mu            sync.Mutex
	seen          []string
}

func (e *events) Received() { e.add("received") }

func (e *events) Decided(outcome string) { e.add(outcome) }

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, s)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// nopObserver discards everything.
type nopObserver struct{}

func (nopObserver) RequestDone(string, string, string) {}
func (nopObserver) QueueWait(string, float64)          {}
func (nopObserver) FirstByte(float64)                  {}
func (nopObserver) Received()                          {}
func (nopObserver) Decided(string)                     {}

// funcClassifier classifies with its function.
type funcClassifier func(*admission.Request) error

func (f funcClassifier) Classify(_ context.Context, r *admission.Request) error { return f(r) }

func (funcClassifier) OnEvent(admission.Event) {}

func policyOf(c admission.Classifier) func(*gate.Options) {
	return func(o *gate.Options) {
		o.Policy = &gate.Policy{Classifier: c, Classes: []string{"default"}, DefaultClass: "default"}
	}
}

// TestReceivedAndDecided: every request that reaches the limiter is
// Received as it arrives and Decided once, with its outcome; those refused
// before it (draining, too large, busy, the classifier) get neither.
func TestReceivedAndDecided(t *testing.T) {
	oneSlot := limiter.Options{Slots: 1, QueueLen: 1}
	tests := []struct {
		name   string
		limits limiter.Options
		gate   func(*gate.Options)
		req    gate.Request
		// held says a slot is held outside the gate until a second has
		// passed; cancel, when set, ends the request's context then.
		held   bool
		cancel time.Duration
		// gone says the request's context has ended on arrival.
		gone  bool
		drain bool
		want  []string
	}{
		{name: "direct", limits: oneSlot, want: []string{"received", "admitted_direct"}},
		{name: "queued, then admitted", limits: oneSlot, held: true, want: []string{"received", "admitted_queued"}},
		{name: "queue full", limits: limiter.Options{Slots: 1}, held: true, want: []string{"received", "rejected_capacity"}},
		{name: "queue delay expired", limits: limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: 500 * time.Millisecond},
			held: true, want: []string{"received", "rejected_queue_expired"}},
		{name: "own deadline passed", limits: oneSlot, held: true,
			gate: policyOf(funcClassifier(func(r *admission.Request) error {
				r.SetDueAt(time.Now().Add(500 * time.Millisecond))
				return nil
			})),
			want: []string{"received", "rejected_queue_timeout"}},
		{name: "client left while queued", limits: oneSlot, held: true, cancel: 500 * time.Millisecond,
			want: []string{"received", "cancelled_queued"}},
		{name: "client gone on arrival", limits: oneSlot, gone: true, want: []string{"received", "cancelled_queued"}},
		{name: "peer closed while queued", limits: oneSlot, held: true, req: gate.Request{Watch: &watch{gone: true}},
			want: []string{"received", "cancelled_queued"}},
		{name: "body too large while queued", limits: oneSlot, held: true, req: gate.Request{Watch: &watch{err: gate.ErrTooLarge}},
			want: []string{"received", "rejected_too_large"}},
		{name: "classified, admitted", limits: oneSlot, gate: policyOf(admission.PassThrough{}),
			want: []string{"received", "admitted_direct"}},
		{name: "classified, queued", limits: oneSlot, held: true, gate: policyOf(admission.PassThrough{}),
			want: []string{"received", "admitted_queued"}},
		{name: "draining", limits: oneSlot, drain: true},
		{name: "too large", limits: oneSlot, req: gate.Request{TooLarge: true}},
		{name: "busy", limits: oneSlot, gate: func(o *gate.Options) { o.Busy = func() bool { return true } }},
		{name: "classifier refusal", limits: oneSlot,
			gate: policyOf(funcClassifier(func(*admission.Request) error {
				return admission.Reject(admission.RateLimited, "slow down")
			}))},
		{name: "classifier chose no class", limits: oneSlot,
			gate: policyOf(funcClassifier(func(r *admission.Request) error { r.SetPolicyClass("nope"); return nil }))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ev := &events{Observer: nopObserver{}}
				g, lim, _ := newGate(t, tc.limits, func(o *gate.Options) {
					if tc.gate != nil {
						tc.gate(o)
					}
					o.Observer = ev
				})
				if tc.drain {
					g.StartDraining()
				}
				if tc.held {
					p, err := lim.TryAcquire(limiter.Request{})
					if err != nil {
						t.Fatal(err)
					}
					time.AfterFunc(time.Second, p.Release)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel > 0 {
					time.AfterFunc(tc.cancel, cancel)
				}
				if tc.gone {
					cancel()
				}
				var ex gate.Exchange
				ch := admitAsync(ctx, g, &ex, tc.req)
				if _, ok := decided(ch); !ok {
					// It waits: it was Received on arrival, and nothing
					// is decided yet.
					if got := ev.list(); !slices.Equal(got, []string{"received"}) {
						t.Errorf("while waiting: %q, want [received]", got)
					}
					<-ch
				}
				if got := ev.list(); !slices.Equal(got, tc.want) {
					t.Errorf("observed %q, want %q", got, tc.want)
				}
				g.Finish(&ex, false)
				time.Sleep(2 * time.Second) // past the held slot's release
				if got := ev.list(); !slices.Equal(got, tc.want) {
					t.Errorf("after Finish: %q, want %q", got, tc.want)
				}
				if s := placesOf(lim.Stats()); s != (places{}) {
					t.Errorf("after Finish: %+v, want nothing held", s)
				}
			})
		})
	}
}

// TestAbortGraceSetting: the slot of a request whose client left while it ran
// goes to the waiter after the abort grace as set (5 ms unset), or at
// once without one (issue 14).
func TestAbortGraceSetting(t *testing.T) {
	tests := []struct {
		name  string
		opts  func(*gate.Options)
		grace time.Duration
	}{
		{name: "default", opts: func(*gate.Options) {}, grace: gate.DefaultAbortGrace},
		{name: "set", opts: func(o *gate.Options) { o.AbortGrace = 300 * time.Millisecond }, grace: 300 * time.Millisecond},
		{name: "none", opts: func(o *gate.Options) { o.NoAbortGrace = true }, grace: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, tc.opts)
				var holder, waiter gate.Exchange
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
					t.Fatalf("holder not admitted: %+v", d)
				}
				ch := admitAsync(context.Background(), g, &waiter, gate.Request{})
				if _, ok := decided(ch); ok {
					t.Fatal("the waiter was admitted while N was full")
				}
				start := time.Now()
				g.Finish(&holder, true)
				d, ok := decided(ch)
				if tc.grace > 0 {
					if ok {
						t.Fatal("the waiter was admitted within the abort grace")
					}
					time.Sleep(tc.grace - time.Nanosecond)
					if _, ok := decided(ch); ok {
						t.Fatalf("the waiter was admitted %s after the abort, before the grace of %s", time.Since(start), tc.grace)
					}
					time.Sleep(time.Nanosecond)
					d, ok = decided(ch)
				}
				if !ok || !d.Admitted {
					t.Fatalf("waiter: decided %v, %+v at %s; want admitted at %s", ok, d, time.Since(start), tc.grace)
				}
				if got := lim.Stats().Holding; got != 1 {
					t.Errorf("Holding = %d, want the waiter's 1", got)
				}
				g.Finish(&waiter, false)
			})
		})
	}
}
