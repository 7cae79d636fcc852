package gate_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// TestTokenAdmission: with a token limit in force the gate settles the
// watch before it asks the limiter, and gives the limiter the tokens the
// adapter counted from what the watch read; without one it counts
// nothing and starts no watch for a request admitted at once.
func TestTokenAdmission(t *testing.T) {
	tests := []struct {
		name   string
		opts   limiter.Options
		held   int64 // tokens already in prefill
		tokens int64
		w      watch
		want   gate.Outcome
		// wantCounted: the adapter's count was asked for; wantStarted:
		// the watch ran (before admission, or while queued).
		wantCounted, wantStarted bool
	}{
		{name: "no token limit: nothing counted", opts: limiter.Options{Slots: 4, QueueLen: 2}, tokens: 900,
			want: gate.AdmittedDirect},
		{name: "fits P", opts: limiter.Options{Slots: 4, QueueLen: 2, PrefillTokenLimit: 1000}, held: 400, tokens: 600,
			want: gate.AdmittedDirect, wantCounted: true, wantStarted: true},
		{name: "queue token limit", opts: limiter.Options{Slots: 1, QueueLen: 4, QueueTokenLimit: 1000}, tokens: 1001,
			want: gate.RejectedQueueTokens, wantCounted: true, wantStarted: true},
		{name: "the read fails: too large", opts: limiter.Options{Slots: 4, QueueLen: 2, PrefillTokenLimit: 1000},
			w: watch{err: gate.ErrTooLarge}, want: gate.RejectedTooLarge, wantStarted: true},
		{name: "the read fails: broken upload", opts: limiter.Options{Slots: 4, QueueLen: 2, PrefillTokenLimit: 1000},
			w: watch{err: errors.New("unexpected EOF")}, want: gate.RejectedBadRequest, wantStarted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, lim, obs := newGate(t, tc.opts, nil)
				if tc.held > 0 {
					p, err := lim.TryAcquire(limiter.Request{Tokens: tc.held})
					if err != nil {
						t.Fatal(err)
					}
					defer p.Release()
				}
				if tc.want == gate.RejectedQueueTokens {
					// The slot held and one waiter, so that the queue is not
					// empty: an empty queue takes a request of any size.
					p, err := lim.TryAcquire(limiter.Request{})
					if err != nil {
						t.Fatal(err)
					}
					defer p.Release()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					go func() { _, _ = lim.AcquireRequest(ctx, limiter.Request{Tokens: 1}) }()
					synctest.Wait() // it waits
				}
				w := tc.w
				counted := false
				var ex gate.Exchange
				d := g.Admit(context.Background(), &ex, gate.Request{Watch: &w, Tokens: func() int64 { counted = true; return tc.tokens }})
				if ex.Outcome != tc.want || d.Admitted != (tc.want == gate.AdmittedDirect) {
					t.Fatalf("Admit = %+v, outcome %s; want %s", d, ex.Outcome, tc.want)
				}
				if counted != tc.wantCounted || (w.started == 1) != tc.wantStarted || d.Watched != tc.wantStarted {
					t.Errorf("counted %v, watch started %d, watched %v; want counted %v, started %v",
						counted, w.started, d.Watched, tc.wantCounted, tc.wantStarted)
				}
				if d.Admitted {
					if got := lim.Stats().PrefillTokens; tc.wantCounted && got != tc.held+tc.tokens {
						t.Errorf("prefill tokens %d, want %d", got, tc.held+tc.tokens)
					}
				}
				g.Finish(&ex, false)
				if got := obs.reports(); len(got) != 1 || got[0] != string(tc.want)+"/default" {
					t.Errorf("reports %q", got)
				}
			})
		})
	}
}

// TestUncountedTokens: a request whose adapter could not count its prompt
// (Tokens < 0) counts as the largest token limit in force: admitted
// alone, and published as that, never as a sentinel.
func TestUncountedTokens(t *testing.T) {
	g, lim, _ := newGate(t, limiter.Options{Slots: 4, QueueLen: 2, PrefillTokenLimit: 1000, QueueTokenLimit: 5000}, nil)
	var w watch
	var ex gate.Exchange
	d := g.Admit(context.Background(), &ex, gate.Request{Watch: &w, Tokens: func() int64 { return -1 }})
	if !d.Admitted {
		t.Fatalf("Admit = %+v, outcome %s; want admitted into an empty prefill", d, ex.Outcome)
	}
	if got := lim.Stats().PrefillTokens; got != 5000 {
		t.Errorf("prefill tokens %d, want 5000, the largest token limit", got)
	}
	g.Finish(&ex, false)
}

// TestSettledWatchStillTellsAGoneClient: with a token limit the watch
// runs before admission; a request that then waits, and whose client
// leaves, is still seen gone when it is granted, and never sent.
func TestSettledWatchStillTellsAGoneClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, lim, _ := newGate(t, limiter.Options{Slots: 1, QueueLen: 1, PrefillTokenLimit: 1000}, nil)
		p, err := lim.TryAcquire(limiter.Request{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second)
			p.Release()
		}()
		w := watch{gone: true}
		var ex gate.Exchange
		d := g.Admit(context.Background(), &ex, gate.Request{Watch: &w, Tokens: func() int64 { return 10 }})
		if d.Admitted || ex.Outcome != gate.CancelledQueued || w.started != 1 {
			t.Fatalf("Admit = %+v, outcome %s, watch started %d; want cancelled_queued, started once", d, ex.Outcome, w.started)
		}
		g.Finish(&ex, false)
	})
}
