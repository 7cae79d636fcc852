package gate_test

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// TestRefuseAtOnce: where Admit would refuse at once, RefuseAtOnce refuses
// with the same outcome and the Observer hears the same; where Admit would
// admit or queue, it changes nothing.
func TestRefuseAtOnce(t *testing.T) {
	tests := []struct {
		name           string
		draining, busy bool
		policy         bool // under an admission policy (its classifier admits all)
		held, queued   int  // slots taken, places in the queue taken (Slots 1, QueueLen 1)
		want           gate.Outcome
	}{
		{name: "draining", draining: true, want: gate.RejectedDraining},
		{name: "busy", busy: true, want: gate.RejectedBusy},
		{name: "draining under a policy", draining: true, policy: true, want: gate.RejectedDraining},
		{name: "busy under a policy", busy: true, policy: true, want: gate.RejectedBusy},
		{name: "queue full", held: 1, queued: 1, want: gate.RejectedCapacity},
		{name: "slot free", want: ""},
		{name: "room in the queue", held: 1, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The same state twice: Admit decides on one gate, RefuseAtOnce on the other.
			gates, lims, obs := twinGates(t, gateState{draining: tc.draining, busy: tc.busy, policy: tc.policy,
				held: tc.held, queued: tc.queued})
			before := lims[1].Stats()
			var ex gate.Exchange
			if got := gates[1].RefuseAtOnce(&ex); got != (tc.want != "") || ex.Outcome != tc.want {
				t.Fatalf("RefuseAtOnce = %v, outcome %q; want %q", got, ex.Outcome, tc.want)
			}
			if tc.want == "" {
				if after := lims[1].Stats(); after.Holding != before.Holding || after.Waiting != before.Waiting || obs[1].received != 0 {
					t.Errorf("not refused, yet the gate changed: %+v, then %+v, %d received", before, after, obs[1].received)
				}
				return
			}
			gates[1].Finish(&ex, false)
			var adm gate.Exchange
			d := gates[0].Admit(context.Background(), &adm, gate.Request{})
			gates[0].Finish(&adm, false)
			if d.Admitted || adm.Outcome != tc.want {
				t.Fatalf("Admit: %+v, outcome %s; the table wants %s", d, adm.Outcome, tc.want)
			}
			if obs[0].received != obs[1].received || !slices.Equal(obs[0].decided, obs[1].decided) ||
				!slices.Equal(obs[0].reports(), obs[1].reports()) {
				t.Errorf("the Observer heard %+v from RefuseAtOnce, %+v from Admit", obs[1], obs[0])
			}
			if a, b := lims[0].Stats(), lims[1].Stats(); a.RejectedFull != b.RejectedFull {
				t.Errorf("refusals counted: %d by RefuseAtOnce, %d by Admit", b.RejectedFull, a.RejectedFull)
			}
		})
	}
}

// gateState is the state twinGates builds twice.
type gateState struct {
	opts           limiter.Options // Slots 1, QueueLen 1 when zero
	draining, busy bool
	policy         bool // under an admission policy (its classifier admits all)
	held, queued   int  // slots taken, places in the queue taken
}

// twinGates builds two gates in the same state st, so that one decides
// by Admit and the other by the call under test.
func twinGates(t *testing.T, st gateState) (gates [2]*gate.Gate, lims [2]*limiter.Limiter, obs [2]*observed) {
	t.Helper()
	for i := range 2 {
		lo := st.opts
		if lo.Slots == 0 {
			lo = limiter.Options{Slots: 1, QueueLen: 1}
		}
		if st.policy {
			lo.Classes = []limiter.Class{{Name: "a", Quantum: 1}}
		}
		gates[i], lims[i], obs[i] = newGate(t, lo, func(o *gate.Options) {
			o.Busy = func() bool { return st.busy }
			if st.policy {
				o.Policy = &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"a"}, DefaultClass: "a"}
			}
		})
		fill(t, lims[i], st.held, st.queued)
		if st.draining {
			gates[i].StartDraining()
		}
	}
	return gates, lims, obs
}

// fill takes held slots and queued places of lim, until the test ends.
func fill(t *testing.T, lim *limiter.Limiter, held, queued int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for range held {
		p, err := lim.TryAcquire(limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Release)
	}
	for range queued {
		in := make(chan struct{})
		go func() { _, _ = lim.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(in) }}) }()
		<-in
	}
}

// TestRefuseAtOnceLeavesRequestsItCannotJudge: a classifier reads the
// request before the limiter (a full queue is its classifier's to see
// first), and under a token limit a refusal may depend on the prompt:
// then the gate leaves the request to Admit.
func TestRefuseAtOnceLeavesRequestsItCannotJudge(t *testing.T) {
	t.Run("policy", func(t *testing.T) {
		g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 1, Classes: []limiter.Class{{Name: "a", Quantum: 1}}},
			func(o *gate.Options) {
				o.Policy = &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"a"}, DefaultClass: "a"}
			})
		fill(t, lim, 1, 1)
		var ex gate.Exchange
		if g.RefuseAtOnce(&ex) || ex.Outcome != "" || obs.received != 0 {
			t.Errorf("RefuseAtOnce refused (%q, %d received), want it left to Admit", ex.Outcome, obs.received)
		}
	})
	t.Run("tokens decide", func(t *testing.T) {
		// A slot free but 90 of P's 100 tokens in prefill, no queue: a
		// prompt of 5 tokens is admitted, one of 50 refused.
		g, lim, obs := newGate(t, limiter.Options{Slots: 2, PrefillTokenLimit: 100}, nil)
		p, err := lim.TryAcquire(limiter.Request{Tokens: 90})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		var ex gate.Exchange
		if g.RefuseAtOnce(&ex) || ex.Outcome != "" || obs.received != 0 {
			t.Errorf("RefuseAtOnce refused (%q, %d received), want it left to Admit", ex.Outcome, obs.received)
		}
	})
}

// TestRefuseAtOnceUnderTokenLimits: under a token limit, with no slot
// free and no room in the queue, the refusal holds whatever the prompt:
// RefuseAtOnce refuses, as Admit refuses a counted prompt.
func TestRefuseAtOnceUnderTokenLimits(t *testing.T) {
	g, lim, _ := newGate(t, limiter.Options{Slots: 1, PrefillTokenLimit: 100, QueueTokenLimit: 1000}, nil)
	fill(t, lim, 1, 0)
	var ex gate.Exchange
	if !g.RefuseAtOnce(&ex) || ex.Outcome != gate.RejectedCapacity {
		t.Fatalf("RefuseAtOnce: outcome %q, want %s", ex.Outcome, gate.RejectedCapacity)
	}
	g.Finish(&ex, false)
	var adm gate.Exchange
	if d := g.Admit(context.Background(), &adm, gate.Request{Tokens: func() int64 { return 5 }}); d.Admitted || adm.Outcome != gate.RejectedCapacity {
		t.Errorf("Admit of a 5-token prompt: %+v, %s; RefuseAtOnce said %s", d, adm.Outcome, gate.RejectedCapacity)
	}
	g.Finish(&adm, false)
}

// TestRefuseAtOnceByTheRank: with limits per rank, a request that names no
// rank is refused only when every rank is full, as Admit places it on the
// rank with the most room.
func TestRefuseAtOnceByTheRank(t *testing.T) {
	lims := rankLimiters(t, 2, limiter.Options{Slots: 1})
	g, err := gate.New(gate.Options{Limiters: lims})
	if err != nil {
		t.Fatal(err)
	}
	pinned := func(rank int) {
		var ex gate.Exchange
		if d := g.Admit(context.Background(), &ex, gate.Request{Pinned: true, Rank: rank}); !d.Admitted {
			t.Fatalf("rank %d: %s", rank, ex.Outcome)
		}
		t.Cleanup(func() { g.Finish(&ex, false) })
	}
	pinned(0)
	var ex gate.Exchange
	if g.RefuseAtOnce(&ex) {
		t.Fatalf("refused (%s) with rank 1 free", ex.Outcome)
	}
	pinned(1)
	if !g.RefuseAtOnce(&ex) || ex.Outcome != gate.RejectedCapacity || ex.Rank != 0 && ex.Rank != 1 {
		t.Fatalf("every rank full: outcome %q rank %d, want %s on a rank", ex.Outcome, ex.Rank, gate.RejectedCapacity)
	}
	g.Finish(&ex, false)
	if got := rankPlaces(lims); got != "1/1/0 1/1/0" {
		t.Errorf("places %s after the refusal, want each rank's one slot held", got)
	}
}

// TestAdmitAtOnce: where Admit would admit or refuse at arrival,
// AdmitAtOnce decides the same, with the same outcome, slot and
// Observer; where the request would wait, or the gate must read it
// first, it leaves the gate as it was, but for the queue place a request
// that would wait holds until it releases it: meanwhile the next request
// is refused at once.
func TestAdmitAtOnce(t *testing.T) {
	tests := []struct {
		name           string
		draining, busy bool
		held, queued   int // slots taken, places in the queue taken (Slots 1, QueueLen 1)
		opts           limiter.Options
		policy         bool
		want           gate.Outcome // "": left to Admit
	}{
		{name: "slot free", want: gate.AdmittedDirect},
		{name: "draining", draining: true, want: gate.RejectedDraining},
		{name: "busy", busy: true, want: gate.RejectedBusy},
		{name: "queue full", held: 1, queued: 1, want: gate.RejectedCapacity},
		{name: "room in the queue", held: 1},
		{name: "policy", policy: true},
		{name: "token limit", opts: limiter.Options{Slots: 1, QueueLen: 1, PrefillTokenLimit: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gates, lims, obs := twinGates(t, gateState{opts: tc.opts, draining: tc.draining, busy: tc.busy,
				policy: tc.policy, held: tc.held, queued: tc.queued})
			before := lims[1].Stats()
			var ex gate.Exchange
			d, held, done := gates[1].AdmitAtOnce(&ex)
			if done != (tc.want != "") || done && ex.Outcome != tc.want || d.Admitted != (tc.want == gate.AdmittedDirect) {
				t.Fatalf("AdmitAtOnce = %+v, %v, outcome %q; want %q", d, done, ex.Outcome, tc.want)
			}
			if wouldWait := tc.name == "room in the queue"; (held != nil) != wouldWait {
				t.Fatalf("AdmitAtOnce held a queue place: %v; want %v", held != nil, wouldWait)
			}
			if !done {
				if after := lims[1].Stats(); !reflect.DeepEqual(after, before) || obs[1].received != 0 || len(obs[1].decided) != 0 {
					t.Errorf("left to Admit, yet the gate changed: %+v, then %+v, %d received", before, after, obs[1].received)
				}
				if held != nil {
					wantHeldPlace(t, gates[1], held)
				}
				return
			}
			if d.Admitted && lims[1].Stats().Holding != before.Holding+1 {
				t.Errorf("admitted without a slot: %+v", lims[1].Stats())
			}
			gates[1].Finish(&ex, false)
			var adm gate.Exchange
			ad := gates[0].Admit(context.Background(), &adm, gate.Request{})
			gates[0].Finish(&adm, false)
			if ad.Admitted != d.Admitted || adm.Outcome != tc.want {
				t.Fatalf("Admit: %+v, outcome %s; the table wants %s", ad, adm.Outcome, tc.want)
			}
			if obs[0].received != obs[1].received || !slices.Equal(obs[0].decided, obs[1].decided) ||
				!slices.Equal(obs[0].reports(), obs[1].reports()) {
				t.Errorf("the Observer heard %+v from AdmitAtOnce, %+v from Admit", obs[1], obs[0])
			}
			if a, b := lims[0].Stats(), lims[1].Stats(); !reflect.DeepEqual(a, b) {
				t.Errorf("the limiters differ after both ended: %+v by AdmitAtOnce, %+v by Admit", b, a)
			}
		})
	}
}

// TestAdmitAtOnceLeavesRanks: with limits per rank the gate places the
// request on the rank with the most room and tells the engine, which
// only Admit does.
func TestAdmitAtOnceLeavesRanks(t *testing.T) {
	g, err := gate.New(gate.Options{Limiters: rankLimiters(t, 2, limiter.Options{Slots: 1})})
	if err != nil {
		t.Fatal(err)
	}
	var ex gate.Exchange
	if d, _, done := g.AdmitAtOnce(&ex); done {
		t.Fatalf("decided %+v (%s), want it left to Admit", d, ex.Outcome)
	}
}

// wantHeldPlace checks that held, the queue's last place, refuses the
// next request at once, and that its release gives the place back.
func wantHeldPlace(t *testing.T, g *gate.Gate, held *limiter.Reservation) {
	t.Helper()
	var next gate.Exchange
	if _, h, done := g.AdmitAtOnce(&next); !done || h != nil || next.Outcome != gate.RejectedCapacity {
		t.Errorf("with the last place held: AdmitAtOnce done %v, outcome %q; want RejectedCapacity", done, next.Outcome)
	}
	g.Finish(&next, false)
	held.Release()
	var again gate.Exchange
	_, h, done := g.AdmitAtOnce(&again)
	if done || h == nil {
		t.Fatalf("after the release: AdmitAtOnce done %v, outcome %q; want the place held again", done, again.Outcome)
	}
	h.Release()
}

// TestParkAtOnce: a request AdmitAtOnce found would wait, parked by its
// adapter with its held place (ParkAtOnce), waits in that place and is
// resumed with its decision: the slot once its holder leaves, or at once
// when a slot freed before it was parked, or a refusal when the gate began
// draining or found the engine busy meanwhile; a refused one gives its
// place back. The Observer hears what Admit would have told it.
func TestParkAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		since func(g *gate.Gate, holder *gate.Exchange, busy *atomic.Bool) // between AdmitAtOnce and ParkAtOnce
		want  gate.Outcome
		calls []string
		queue bool // it waits in the queue until the holder leaves
	}{
		{name: "waits", since: func(*gate.Gate, *gate.Exchange, *atomic.Bool) {}, want: gate.AdmittedQueued,
			calls: []string{"watch", "unwatch", "resume"}, queue: true},
		{name: "a slot freed", since: func(g *gate.Gate, h *gate.Exchange, _ *atomic.Bool) { g.Finish(h, false) },
			want: gate.AdmittedDirect, calls: []string{"watch", "unwatch", "resume"}},
		{name: "draining", since: func(g *gate.Gate, _ *gate.Exchange, _ *atomic.Bool) { g.StartDraining() },
			want: gate.RejectedDraining, calls: []string{"resume"}},
		{name: "busy", since: func(_ *gate.Gate, _ *gate.Exchange, b *atomic.Bool) { b.Store(true) },
			want: gate.RejectedBusy, calls: []string{"resume"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var busy atomic.Bool
			g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, func(o *gate.Options) { o.Busy = busy.Load })
			var holder, ex gate.Exchange
			if d := g.Admit(context.Background(), &holder, gate.Request{}); !d.Admitted {
				t.Fatalf("holder: %+v", d)
			}
			_, held, done := g.AdmitAtOnce(&ex)
			if done || held == nil {
				t.Fatalf("AdmitAtOnce: done %v, held %v; want the request to wait", done, held)
			}
			tc.since(g, &holder, &busy)
			pk := newParker()
			g.ParkAtOnce(&ex, pk, held)
			if tc.queue {
				if s := lim.Stats(); s.Waiting != 1 {
					t.Fatalf("waiting %d, want 1", s.Waiting)
				}
				wantQueueFull(t, g)
				g.Finish(&holder, false)
			}
			d := <-pk.resumed
			if d.Admitted != (tc.want == gate.AdmittedQueued || tc.want == gate.AdmittedDirect) || ex.Outcome != tc.want {
				t.Fatalf("resumed with %+v, outcome %q; want %q", d, ex.Outcome, tc.want)
			}
			if got := pk.got(); !slices.Equal(got, tc.calls) {
				t.Errorf("the parker was asked %v, want %v", got, tc.calls)
			}
			g.Finish(&ex, false)
			// The holder, an admitted request, and the refusal wantQueueFull
			// asks for: a request refused before the limiter is not received.
			if want := 1 + boolInt(d.Admitted) + boolInt(tc.queue); obs.received != want {
				t.Errorf("received %d, want %d", obs.received, want)
			}
			if !d.Admitted {
				busy.Store(false)
				if s := lim.Stats(); s.Waiting != 0 {
					t.Errorf("refused, yet %d wait", s.Waiting)
				}
				if tc.want == gate.RejectedBusy {
					var next gate.Exchange
					_, h, _ := g.AdmitAtOnce(&next)
					if h == nil {
						t.Errorf("the refused request kept its place: the next one is %q", next.Outcome)
					}
					h.Release()
				}
			}
		})
	}
}

// wantQueueFull checks that the next request is refused at once: the
// queue's places are taken.
func wantQueueFull(t *testing.T, g *gate.Gate) {
	t.Helper()
	var next gate.Exchange
	if _, h, done := g.AdmitAtOnce(&next); !done || h != nil || next.Outcome != gate.RejectedCapacity {
		t.Errorf("with the queue full: AdmitAtOnce done %v, outcome %q; want RejectedCapacity", done, next.Outcome)
	}
	g.Finish(&next, false)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
