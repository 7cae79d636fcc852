package gate_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// parker is a gate.Parker that records what the gate asked of it; the
// test plays its client.
type parker struct {
	refuse  bool   // Park says it cannot
	gone    bool   // Unwatch says the client left
	panicIn string // "unwatch" or "resume": that call panics (the first time)

	mu      sync.Mutex
	calls   []string
	leave   func()
	resumed chan gate.Decision
}

func newParker() *parker { return &parker{resumed: make(chan gate.Decision, 1)} }

func (p *parker) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *parker) Parkable() bool { return true }

func (p *parker) Park() bool {
	p.record("park")
	return !p.refuse
}

func (p *parker) Watch(gone func()) {
	p.record("watch")
	p.mu.Lock()
	p.leave = gone
	p.mu.Unlock()
}

func (p *parker) Unwatch() bool {
	p.record("unwatch")
	p.panicOnce("unwatch")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leave = nil
	return p.gone
}

func (p *parker) Resume(d gate.Decision) {
	p.record("resume")
	p.panicOnce("resume")
	p.resumed <- d
}

// panicOnce panics in the call named by panicIn, the first time only.
func (p *parker) panicOnce(call string) {
	p.mu.Lock()
	hit := p.panicIn == call
	if hit {
		p.panicIn = ""
	}
	p.mu.Unlock()
	if hit {
		panic("parker: " + call + " broke")
	}
}

// clientLeaves plays the client leaving while the watch is on.
func (p *parker) clientLeaves() {
	p.mu.Lock()
	f := p.leave
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

func (p *parker) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// TestParked: a request that would wait is parked (Admit returns at
// once, Decision.Parked), watched while it waits, and resumed once with
// its decision: the slot when a holder leaves, cancelled_queued when its
// client left (before the grant, or as it came), or the wait as usual
// when the adapter cannot park it.
func TestParked(t *testing.T) {
	tests := []struct {
		name   string
		parker func() *parker
		leaves bool // the client leaves while the request waits
		want   gate.Outcome
		calls  []string
	}{
		{name: "granted", parker: newParker, want: gate.AdmittedQueued,
			calls: []string{"park", "watch", "unwatch", "resume"}},
		{name: "client left", parker: newParker, leaves: true, want: gate.CancelledQueued,
			calls: []string{"park", "watch", "unwatch", "resume"}},
		{name: "granted after the client left", parker: func() *parker { p := newParker(); p.gone = true; return p },
			want: gate.CancelledQueued, calls: []string{"park", "watch", "unwatch", "resume"}},
		{name: "cannot park", parker: func() *parker { p := newParker(); p.refuse = true; return p },
			want: gate.AdmittedQueued, calls: []string{"park"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, nil)
				var holder, waiter gate.Exchange
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
					t.Fatalf("holder: %+v", d)
				}
				pk := tc.parker()
				ch := admitAsync(context.Background(), g, &waiter, gate.Request{Park: pk})
				d, returned := decided(ch)
				if returned != !pk.refuse || d.Parked == pk.refuse {
					t.Fatalf("Admit returned %v (%+v) before a slot was free; want it parked at once: %v", returned, d, !pk.refuse)
				}
				if s := lim.Stats(); s.Waiting != 1 {
					t.Fatalf("waiting %d, want 1", s.Waiting)
				}
				if tc.leaves {
					pk.clientLeaves()
					synctest.Wait()
					if s := lim.Stats(); s.Waiting != 0 || s.CancelledWaiting != 1 {
						t.Fatalf("after the client left: %+v", s)
					}
				}
				g.Finish(&holder, false)
				synctest.Wait()
				if pk.refuse {
					d = <-ch
				} else {
					d = <-pk.resumed
				}
				if waiter.Outcome != tc.want || d.Admitted != (tc.want == gate.AdmittedQueued) {
					t.Fatalf("decision %+v, outcome %s; want %s", d, waiter.Outcome, tc.want)
				}
				if !waiter.Queued {
					t.Error("the parked request is not marked Queued")
				}
				if got := pk.got(); !slices.Equal(got, tc.calls) {
					t.Errorf("parker calls %v, want %v", got, tc.calls)
				}
				g.Finish(&waiter, false)
				synctest.Wait()
				if s := lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Errorf("after both finished: %+v", s)
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

// TestParkedAtOnce: room that comes as the request is parked decides it
// at once, unqueued, and it is resumed all the same.
func TestParkedAtOnce(t *testing.T) {
	g, _, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, nil)
	var holder, waiter gate.Exchange
	if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
		t.Fatalf("holder: %+v", d)
	}
	pk := &freeOnPark{parker: newParker(), free: func() { g.Finish(&holder, false) }}
	d := g.Admit(context.Background(), &waiter, gate.Request{Park: pk})
	if !d.Parked {
		t.Fatalf("Admit = %+v, want parked", d)
	}
	if d := <-pk.resumed; !d.Admitted || waiter.Outcome != gate.AdmittedDirect || waiter.Queued {
		t.Fatalf("resumed with %+v, outcome %s, queued %v; want admitted_direct", d, waiter.Outcome, waiter.Queued)
	}
	g.Finish(&waiter, false)
}

// freeOnPark frees the holder's slot as the request is parked.
type freeOnPark struct {
	*parker
	free func()
}

func (p *freeOnPark) Park() bool {
	p.free()
	return p.parker.Park()
}

// TestParkedTimeoutAfterClientLeft: a parked request whose queue delay
// passes after its client left (the watch had not told yet) ends as
// cancelled_queued, not as a timeout answered to nobody: the client's
// departure wins, as for a request waiting on its goroutine.
func TestParkedTimeoutAfterClientLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: time.Second}, nil)
		var holder, waiter gate.Exchange
		if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
			t.Fatalf("holder: %+v", d)
		}
		pk := newParker()
		pk.gone = true
		if d := g.Admit(context.Background(), &waiter, gate.Request{Park: pk}); !d.Parked {
			t.Fatalf("Admit = %+v, want parked", d)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d := <-pk.resumed; d.Admitted || waiter.Outcome != gate.CancelledQueued {
			t.Fatalf("resumed with %+v, outcome %s; want cancelled_queued", d, waiter.Outcome)
		}
		g.Finish(&waiter, true)
		g.Finish(&holder, false)
		if s := lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
			t.Errorf("after both finished: %+v", s)
		}
	})
}

// TestParkedUnderPolicy: with an admission policy, a request its
// classifier decides at once is parked as one without a policy is, in the
// class the classifier chose and with its deadline: granted in its turn
// (its lifecycle events following), or ended by the classifier's deadline.
// A request the classifier deferred waits on its goroutine instead.
func TestParkedUnderPolicy(t *testing.T) {
	tests := []struct {
		name    string
		session string
		parked  bool
		want    gate.Outcome
		class   string
		events  string
	}{
		{name: "granted in its class", session: "batch", parked: true, want: gate.AdmittedQueued, class: "batch", events: "sent,completed"},
		{name: "the classifier's deadline", session: "due", parked: true, want: gate.RejectedQueueTimeout, class: "interactive", events: "aborted"},
		// Its watch started, and read the body: parked once it has.
		{name: "deferred by the classifier", session: "defer", parked: true, want: gate.AdmittedQueued, class: "interactive", events: "sent,completed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &classifier{}
				policy := funcEventClassifier{c: c, classify: func(r *admission.Request) error {
					switch r.Session() {
					case "batch":
						r.SetPolicyClass("batch")
					case "due":
						r.SetDueAt(time.Now().Add(time.Second))
					case "defer":
						time.Sleep(10 * time.Millisecond) // past the deferral grace: the watch starts
					}
					return nil
				}}
				g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 2,
					Classes: []limiter.Class{{Name: "interactive", Quantum: 1}, {Name: "batch", Quantum: 1}}}, func(o *gate.Options) {
					o.Policy = &gate.Policy{Classifier: policy, Classes: []string{"interactive", "batch"}, DefaultClass: "interactive"}
				})
				var holder, waiter gate.Exchange
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
					t.Fatalf("holder: %+v", d)
				}
				pk := newParker()
				ch := admitAsync(context.Background(), g, &waiter, gate.Request{Session: tc.session, Park: pk, Watch: &watch{}})
				time.Sleep(20 * time.Millisecond) // past any deferral
				d, returned := decided(ch)
				if returned != tc.parked || d.Parked != tc.parked {
					t.Fatalf("Admit returned %v (%+v) with no slot free; want parked and returned: %v", returned, d, tc.parked)
				}
				if s := lim.Stats(); s.Waiting != 1 {
					t.Fatalf("waiting %d, want 1", s.Waiting)
				}
				if tc.want == gate.RejectedQueueTimeout {
					time.Sleep(2 * time.Second)
					synctest.Wait()
				}
				holder.BeginFlight()
				g.Finish(&holder, false)
				synctest.Wait()
				if tc.parked {
					d = <-pk.resumed
				} else {
					d = <-ch
				}
				if waiter.Outcome != tc.want || waiter.Class != tc.class || d.Admitted != (tc.want == gate.AdmittedQueued) {
					t.Fatalf("decision %+v: %s in %s; want %s in %s", d, waiter.Outcome, waiter.Class, tc.want, tc.class)
				}
				if d.Admitted {
					waiter.BeginFlight()
					waiter.Sent()
				}
				g.Finish(&waiter, false)
				if s := lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Errorf("after both finished: %+v", s)
				}
				// The holder's events, then the waiter's.
				if got := strings.Join(c.got(), ","); got != "completed,"+tc.events {
					t.Errorf("classifier events %q, want %q", got, "completed,"+tc.events)
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

// lateWatch is a watch whose read fails only when settled, as a body read
// that breaks after its request's context was last looked at.
type lateWatch struct{ watch }

func (w *lateWatch) Start(func(error)) { w.started++ }

// TestDeferredWatchFailsBeforePark: a request whose classifier deferred
// it, and whose watch's read then fails, is refused with the read's
// reason when the gate settles the watch to park it: never parked.
func TestDeferredWatchFailsBeforePark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := funcEventClassifier{c: &classifier{}, classify: func(*admission.Request) error {
			time.Sleep(10 * time.Millisecond) // past the deferral grace: the watch starts
			return nil
		}}
		g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 2,
			Classes: []limiter.Class{{Name: "interactive", Quantum: 1}}}, func(o *gate.Options) {
			o.Policy = &gate.Policy{Classifier: policy, Classes: []string{"interactive"}, DefaultClass: "interactive"}
		})
		var holder, waiter gate.Exchange
		if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
			t.Fatalf("holder: %+v", d)
		}
		pk := newParker()
		w := &lateWatch{watch{err: gate.ErrBodyTimeout}}
		d := g.Admit(context.Background(), &waiter, gate.Request{Park: pk, Watch: w})
		if d.Admitted || d.Parked || !d.Watched || waiter.Outcome != gate.RejectedBodyTimeout {
			t.Fatalf("decision %+v, outcome %s; want refused body_timeout, watched, not parked", d, waiter.Outcome)
		}
		if w.started != 1 || !slices.Equal(w.settled, []bool{false}) || len(pk.got()) != 0 {
			t.Errorf("watch started %d, settled %v, parker asked %v; want started once, settled once, never parked",
				w.started, w.settled, pk.got())
		}
		if s := lim.Stats(); s.Waiting != 0 {
			t.Errorf("waiting %d, want 0", s.Waiting)
		}
		g.Finish(&waiter, false)
		holder.BeginFlight()
		g.Finish(&holder, false)
	})
}

// funcEventClassifier classifies with its function and records events in c.
type funcEventClassifier struct {
	c        *classifier
	classify func(*admission.Request) error
}

func (f funcEventClassifier) Classify(_ context.Context, r *admission.Request) error {
	return f.classify(r)
}

func (f funcEventClassifier) OnEvent(e admission.Event) { f.c.OnEvent(e) }

func (c *classifier) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// slowParker is a parker whose Park waits until released: the adapter's
// own work as it parks (net/http's hijack, the request's bytes copied).
type slowParker struct {
	*parker
	parking, release chan struct{}
}

func (p *slowParker) Park() bool {
	close(p.parking)
	<-p.release
	return p.parker.Park()
}

// TestParkHoldsItsPlace: a request to park holds its queue place from
// the limiter's first answer until it waits, through the body's read and
// the adapter's Park: a request that arrives meanwhile is refused at
// once, as it would be once the first waits, rather than taken for a
// request to park and refused only once parked. A place the adapter held
// (Request.Held) is taken the same way, and given back when the request
// is decided otherwise.
func TestParkHoldsItsPlace(t *testing.T) {
	for _, adapterHeld := range []bool{false, true} {
		t.Run(map[bool]string{false: "held by the gate", true: "held by the adapter"}[adapterHeld], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, nil)
				var holder, waiter, next gate.Exchange
				if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
					t.Fatalf("holder: %+v", d)
				}
				req := gate.Request{}
				if adapterHeld {
					var done bool
					if _, req.Held, done = g.AdmitAtOnce(&gate.Exchange{}); done || req.Held == nil {
						t.Fatalf("AdmitAtOnce: done %v, held %v; want the place held", done, req.Held)
					}
				}
				pk := &slowParker{parker: newParker(), parking: make(chan struct{}), release: make(chan struct{})}
				req.Park = pk
				ch := admitAsync(context.Background(), g, &waiter, req)
				<-pk.parking
				if d := g.Admit(context.Background(), &next, gate.Request{Park: newParker()}); d.Parked || next.Outcome != gate.RejectedCapacity {
					t.Errorf("a request while the first parks: %+v, outcome %q; want RejectedCapacity", d, next.Outcome)
				}
				g.Finish(&next, false)
				close(pk.release)
				if d := <-ch; !d.Parked {
					t.Fatalf("the first: %+v, want it parked", d)
				}
				if s := lim.Stats(); s.Waiting != 1 {
					t.Fatalf("waiting %d, want 1", s.Waiting)
				}
				req.Held.Release() // taken by the wait: gives nothing back
				g.Finish(&holder, false)
				synctest.Wait()
				if d := <-pk.resumed; !d.Admitted {
					t.Fatalf("the parked request: %+v", d)
				}
				g.Finish(&waiter, false)
				synctest.Wait()
				if s := lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Errorf("after both finished: %+v", s)
				}
				// Every place is back: two requests fill the slot and the queue.
				var a, b gate.Exchange
				if d := g.Admit(context.Background(), &a, gate.Request{}); !d.Admitted {
					t.Errorf("a fresh request: %+v", d)
				}
				if _, held, done := g.AdmitAtOnce(&b); done || held == nil {
					t.Errorf("the queue's place after all ended: done %v, held %v; want it held", done, held)
				} else {
					held.Release()
				}
				g.Finish(&a, false)
			})
		})
	}
}
