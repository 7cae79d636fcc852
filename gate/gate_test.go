package gate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
)

// observed records what the gate reports.
type observed struct {
	mu         sync.Mutex
	done       []string // "outcome/class"
	protocols  []string // of each report, in order
	queueWaits int
	firstBytes int
	decided    []string // outcomes, as decided
	received   int
}

func (o *observed) RequestDone(outcome, class, protocol string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, outcome+"/"+class)
	o.protocols = append(o.protocols, protocol)
}

func (o *observed) QueueWait(string, float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queueWaits++
}

func (o *observed) FirstByte(float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.firstBytes++
}

func (o *observed) Received() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.received++
}

func (o *observed) Decided(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decided = append(o.decided, outcome)
}

func (o *observed) reports() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.done...)
}

// watch is a gate.Watch whose fate the test decides: it fails with err
// once started, when err is set, and says the client left when gone.
type watch struct {
	err     error
	gone    bool
	started int
	settled []bool
}

func (w *watch) Start(fail func(error)) {
	w.started++
	if w.err != nil {
		fail(fmt.Errorf("watch: %w", w.err))
	}
}

func (w *watch) Settle(cut bool) error {
	w.settled = append(w.settled, cut)
	return w.err
}

func (w *watch) Gone() bool { return w.gone }

func newGate(t *testing.T, lo limiter.Options, edit func(*gate.Options)) (*gate.Gate, *limiter.Limiter, *observed) {
	t.Helper()
	lim, err := limiter.New(lo)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	opts := gate.Options{Limiter: lim, Observer: obs}
	if edit != nil {
		edit(&opts)
	}
	g, err := gate.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, lim, obs
}

func TestNewValidates(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 2,
		Classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    gate.Options
		wantErr string
	}{
		{"no limiter", gate.Options{}, "a limiter is required"},
		{"no classifier", gate.Options{Limiter: lim, Policy: &gate.Policy{Classes: []string{"a", "b"}, DefaultClass: "a"}}, "classifier"},
		{"default class not a class", gate.Options{Limiter: lim,
			Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"a", "b"}, DefaultClass: "c"}}, "default class"},
		{"classes out of order", gate.Options{Limiter: lim,
			Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"b", "a"}, DefaultClass: "a"}}, "limiter's queues"},
		{"classes match", gate.Options{Limiter: lim,
			Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"a", "b"}, DefaultClass: "b"}}, ""},
		{"unlimited takes any class", gate.Options{Limiter: limiter.NewUnlimited(),
			Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"x"}, DefaultClass: "x"}}, ""},
		{"negative abort grace", gate.Options{Limiter: lim, AbortGrace: -time.Millisecond}, "abort grace -1ms is negative"},
		{"abort grace and none", gate.Options{Limiter: lim, AbortGrace: time.Millisecond, NoAbortGrace: true}, "not both"},
		{"abort grace set", gate.Options{Limiter: lim, AbortGrace: time.Second}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := gate.New(tc.opts)
			if tc.wantErr == "" {
				if err != nil || g == nil {
					t.Fatalf("New = %v, %v; want a gate", g, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "gate: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New error = %v, want gate: ...%s...", err, tc.wantErr)
			}
		})
	}
}

// TestAdmitRefusesInOrder: draining comes before a request known to be
// too large, which comes before busy, which comes before the limiter.
func TestAdmitRefusesInOrder(t *testing.T) {
	tests := []struct {
		name           string
		draining, busy bool
		tooLarge, full bool
		want           gate.Outcome
	}{
		{name: "all at once", draining: true, busy: true, tooLarge: true, full: true, want: gate.RejectedDraining},
		{name: "too large and busy", busy: true, tooLarge: true, full: true, want: gate.RejectedTooLarge},
		{name: "busy and full", busy: true, full: true, want: gate.RejectedBusy},
		{name: "full", full: true, want: gate.RejectedCapacity},
		{name: "free", want: gate.AdmittedDirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, lim, obs := newGate(t, limiter.Options{Slots: 1}, func(o *gate.Options) {
				o.Busy = func() bool { return tc.busy }
			})
			if tc.full {
				release, err := lim.TryAcquire(limiter.Request{})
				if err != nil {
					t.Fatal(err)
				}
				defer release.Release()
			}
			if tc.draining {
				g.StartDraining()
			}
			var ex gate.Exchange
			d := g.Admit(context.Background(), &ex, gate.Request{TooLarge: tc.tooLarge})
			if d.Admitted != (tc.want == gate.AdmittedDirect) || ex.Outcome != tc.want {
				t.Fatalf("Admit = %+v, outcome %s; want %s", d, ex.Outcome, tc.want)
			}
			g.Finish(&ex, false)
			if got := lim.Stats().Holding; got != btoi(tc.full) {
				t.Errorf("holding %d after Finish, want %d", got, btoi(tc.full))
			}
			if got := obs.reports(); len(got) != 1 || got[0] != string(tc.want)+"/"+gate.DefaultClass {
				t.Errorf("reports %q, want one %s", got, tc.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestQueuedWatch: a request that waits has its watch started and
// settled; what the watch finds decides the outcome.
func TestQueuedWatch(t *testing.T) {
	tests := []struct {
		name    string
		w       watch
		want    gate.Outcome
		wantCut bool
		// wantWait is the queue wait: a failed watch ends it at once.
		wantWait time.Duration
	}{
		{name: "alive", w: watch{}, want: gate.AdmittedQueued, wantWait: time.Second},
		{name: "too large", w: watch{err: gate.ErrTooLarge}, want: gate.RejectedTooLarge, wantCut: true},
		{name: "broken upload", w: watch{err: errors.New("unexpected EOF")}, want: gate.RejectedBadRequest, wantCut: true},
		{name: "peer closed", w: watch{gone: true}, want: gate.CancelledQueued, wantWait: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, obs := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, nil)
				release, err := lim.TryAcquire(limiter.Request{})
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					time.Sleep(time.Second) // in the bubble: released once the request waits
					release.Release()
				}()
				w := tc.w
				var ex gate.Exchange
				d := g.Admit(context.Background(), &ex, gate.Request{Watch: &w})
				if ex.Outcome != tc.want || d.Admitted != (tc.want == gate.AdmittedQueued) || !d.Watched {
					t.Fatalf("Admit = %+v, outcome %s; want %s, watched", d, ex.Outcome, tc.want)
				}
				if w.started != 1 || len(w.settled) != 1 || w.settled[0] != tc.wantCut {
					t.Errorf("watch started %d times, settled %v; want once, cut %v", w.started, w.settled, tc.wantCut)
				}
				if !ex.Queued || ex.QueueWait != tc.wantWait {
					t.Errorf("queued %v for %s, want a wait of %s", ex.Queued, ex.QueueWait, tc.wantWait)
				}
				g.Finish(&ex, false)
				time.Sleep(2 * time.Second) // past the first slot's release
				if s := lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
					t.Errorf("after Finish: %+v, want nothing held", s)
				}
				if got := obs.reports(); len(got) != 1 || got[0] != string(tc.want)+"/default" {
					t.Errorf("reports %q", got)
				}
			})
		})
	}
}

// TestClientLeavesTheQueue: a waiting request whose context ends leaves
// the queue at once, with nothing held, as cancelled_queued.
func TestClientLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1}, nil)
		release, err := lim.TryAcquire(limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		defer release.Release()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		var ex gate.Exchange
		d := g.Admit(ctx, &ex, gate.Request{})
		if d.Admitted || ex.Outcome != gate.CancelledQueued {
			t.Fatalf("Admit = %+v, outcome %s; want cancelled_queued", d, ex.Outcome)
		}
		if s := lim.Stats(); s.Holding != 1 || s.Waiting != 0 {
			t.Errorf("stats %+v, want the first slot only", s)
		}
	})
}

// TestAbortGrace: the slot of a request whose client left while it ran
// is handed on 5 ms after Finish, not at once; a clean end frees it at
// once.
func TestAbortGrace(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprint("gone=", gone), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				changes := 0
				g, lim, _ := newGate(t, limiter.Options{Slots: 1}, func(o *gate.Options) { o.Changed = func() { changes++ } })
				var ex gate.Exchange
				if d := g.Admit(context.Background(), &ex, gate.Request{}); !d.Admitted {
					t.Fatal("not admitted")
				}
				g.Finish(&ex, gone)
				if got, want := lim.Stats().Holding, btoi(gone); got != want {
					t.Fatalf("holding %d right after Finish, want %d", got, want)
				}
				time.Sleep(5 * time.Millisecond)
				synctest.Wait()
				if got := lim.Stats().Holding; got != 0 {
					t.Errorf("holding %d after the grace", got)
				}
				if want := 1 + btoi(gone); changes != want {
					t.Errorf("Changed called %d times, want %d", changes, want)
				}
			})
		})
	}
}

// TestEngineDoneSkipsTheGrace: when the engine's answer had ended before
// the client left, the engine is done with the request, so its slot is
// handed on at Finish, without the abort grace.
func TestEngineDoneSkipsTheGrace(t *testing.T) {
	for _, done := range []bool{false, true} {
		t.Run(fmt.Sprint("done=", done), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, _ := newGate(t, limiter.Options{Slots: 1}, nil)
				var ex gate.Exchange
				if d := g.Admit(context.Background(), &ex, gate.Request{}); !d.Admitted {
					t.Fatal("not admitted")
				}
				if done {
					ex.EngineDone()
				}
				g.Finish(&ex, true)
				if got, want := lim.Stats().Holding, btoi(!done); got != want {
					t.Errorf("holding %d right after Finish, want %d", got, want)
				}
				time.Sleep(gate.DefaultAbortGrace)
				synctest.Wait()
				if got := lim.Stats().Holding; got != 0 {
					t.Errorf("holding %d after the grace", got)
				}
			})
		})
	}
}

// TestEngineFinishedHandsTheSlotOn: EngineFinished frees the slot ahead
// of Finish, ends the flight, tells the classifier the request completed
// and the load it changed; Finish then releases nothing more, waits for
// no grace even when the client left, tells the classifier nothing again,
// tells Changed nothing again, and reports once
// (TestEngineFinishedReleasesOnce: the pace's count).
func TestEngineFinishedHandsTheSlotOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &classifier{}
		changes := 0
		flights := inflight.New(func() {})
		g, lim, obs := newGate(t, limiter.Options{Slots: 1}, func(o *gate.Options) {
			o.Policy = &gate.Policy{Classifier: c, Classes: []string{"interactive"}, DefaultClass: "interactive"}
			o.Changed = func() { changes++ }
			o.Flights = flights
		})
		var first, second gate.Exchange
		if d := g.Admit(context.Background(), &first, gate.Request{}); !d.Admitted {
			t.Fatal("the first not admitted")
		}
		first.BeginFlight()
		first.Sent()
		before := changes
		g.EngineFinished(&first)
		if got := lim.Stats().Holding; got != 0 {
			t.Fatalf("holding %d after EngineFinished, want 0", got)
		}
		if got := flights.Len(); got != 0 {
			t.Errorf("%d flights after EngineFinished, want its flight ended", got)
		}
		if changes != before+1 {
			t.Errorf("Changed called %d times by EngineFinished, want once", changes-before)
		}
		if got := strings.Join(c.events, ","); got != "sent,completed" {
			t.Errorf("classifier events %q after EngineFinished, want sent,completed", got)
		}
		if len(obs.reports()) != 0 {
			t.Fatalf("reported %q before Finish", obs.reports())
		}
		if d := g.Admit(context.Background(), &second, gate.Request{}); !d.Admitted {
			t.Fatalf("the next request refused after the first's engine finished: %+v", d)
		}
		g.Finish(&first, true)
		time.Sleep(gate.DefaultAbortGrace)
		synctest.Wait()
		if got := lim.Stats().Holding; got != 1 {
			t.Errorf("holding %d after the first's Finish, want the second's 1", got)
		}
		if got := strings.Join(c.events, ","); got != "sent,completed" {
			t.Errorf("classifier events %q after Finish, want no more", got)
		}
		if got := obs.reports(); len(got) != 1 {
			t.Errorf("reports %q after the first's Finish, want one", got)
		}
		if changes != before+1 {
			t.Errorf("Changed called %d times by EngineFinished and Finish, want once", changes-before)
		}
		g.Finish(&second, false)
		if got := lim.Stats().Holding; got != 0 {
			t.Errorf("holding %d after both finished", got)
		}
	})
}

// TestPassthroughIsNotReported: a passthrough exchange is finished
// without a report or a change.
func TestPassthroughIsNotReported(t *testing.T) {
	changes := 0
	g, _, obs := newGate(t, limiter.Options{Slots: 1}, func(o *gate.Options) { o.Changed = func() { changes++ } })
	ex := gate.Exchange{Outcome: gate.Passthrough}
	ex.BeginFlight()
	ex.Sent()
	g.Finish(&ex, false)
	if len(obs.reports()) != 0 || changes != 0 {
		t.Errorf("passthrough reported %q, %d changes", obs.reports(), changes)
	}
}

// TestReportCarriesProtocol: the Observer hears each exchange's protocol,
// admitted or refused.
func TestReportCarriesProtocol(t *testing.T) {
	g, _, obs := newGate(t, limiter.Options{Slots: 1}, nil)
	admitted := gate.Exchange{Protocol: gate.ProtocolGRPC}
	if d := g.Admit(context.Background(), &admitted, gate.Request{}); !d.Admitted {
		t.Fatal("not admitted")
	}
	refused := gate.Exchange{Protocol: gate.ProtocolHTTP}
	if d := g.Admit(context.Background(), &refused, gate.Request{}); d.Admitted {
		t.Fatal("admitted past N")
	}
	g.Finish(&refused, false)
	g.Finish(&admitted, false)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []string{"rejected_capacity/default", "admitted_direct/default"}
	if !slices.Equal(obs.done, want) || !slices.Equal(obs.protocols, []string{"http", "grpc"}) {
		t.Errorf("reports %q with protocols %q, want %q with [http grpc]", obs.done, obs.protocols, want)
	}
}

// classifier decides by the request's session.
type classifier struct {
	mu     sync.Mutex
	events []string
}

func (c *classifier) Classify(_ context.Context, r *admission.Request) error {
	switch r.Session() {
	case "panic":
		panic("classifier bug")
	case "unknown":
		r.SetPolicyClass("nope")
	case "limited":
		return &admission.Rejection{Kind: admission.RateLimited, Message: "slow down"}
	case "batch":
		r.SetPolicyClass("batch")
	}
	return nil
}

func (c *classifier) OnEvent(e admission.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e.Kind.String())
}

func TestClassifiedAdmission(t *testing.T) {
	tests := []struct {
		session     string
		want        gate.Outcome
		wantClass   string
		wantMessage string
		wantEvents  string
	}{
		{session: "", want: gate.AdmittedDirect, wantClass: "interactive", wantEvents: "sent,completed"},
		{session: "batch", want: gate.AdmittedDirect, wantClass: "batch", wantEvents: "sent,completed"},
		{session: "limited", want: gate.RejectedRateLimited, wantClass: "interactive", wantMessage: "slow down"},
		{session: "panic", want: gate.RejectedPolicy, wantClass: "interactive", wantMessage: "Server overloaded: request rejected by admission policy"},
		{session: "unknown", want: gate.RejectedPolicy, wantClass: "interactive", wantEvents: "aborted"},
	}
	for _, tc := range tests {
		t.Run(tc.session, func(t *testing.T) {
			c := &classifier{}
			g, lim, obs := newGate(t, limiter.Options{Slots: 2, QueueLen: 2,
				Classes: []limiter.Class{{Name: "interactive", Quantum: 1}, {Name: "batch", Quantum: 1}}}, func(o *gate.Options) {
				o.Policy = &gate.Policy{Classifier: c, Classes: []string{"interactive", "batch"}, DefaultClass: "interactive"}
			})
			var ex gate.Exchange
			d := g.Admit(context.Background(), &ex, gate.Request{Session: tc.session})
			if ex.Outcome != tc.want || ex.Class != tc.wantClass || d.Message != tc.wantMessage {
				t.Fatalf("Admit: %s in %s, message %q; want %s in %s, %q", ex.Outcome, ex.Class, d.Message, tc.want, tc.wantClass, tc.wantMessage)
			}
			if d.Admitted {
				ex.BeginFlight()
				ex.Sent()
			}
			g.Finish(&ex, false)
			if got := strings.Join(c.events, ","); got != tc.wantEvents {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			if lim.Stats().Holding != 0 {
				t.Error("a slot is still held")
			}
			if got := obs.reports(); len(got) != 1 || got[0] != string(tc.want)+"/"+tc.wantClass {
				t.Errorf("reports %q", got)
			}
		})
	}
}
