package gate

import (
	"context"
	"testing"

	"github.com/slotgate/slotgate/limiter"
)

// TestEngineFinishedReleasesOnce: a slot handed on by EngineFinished is
// not released again by Finish. The limiter would not tell (a Permit's
// Release does nothing the second time), but the retry hint's pace counts
// each release against the slots held: one too many would leave it
// counting none held while the next request holds one.
func TestEngineFinishedReleasesOnce(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Limiter: lim, PaceRetryAfter: true})
	if err != nil {
		t.Fatal(err)
	}
	var first, second Exchange
	if d := g.Admit(context.Background(), &first, Request{}); !d.Admitted {
		t.Fatal("the first not admitted")
	}
	g.EngineFinished(&first)
	if d := g.Admit(context.Background(), &second, Request{}); !d.Admitted {
		t.Fatal("the second not admitted")
	}
	g.Finish(&first, true)
	g.pace.mu.Lock()
	held := g.pace.held
	g.pace.mu.Unlock()
	if held != 1 {
		t.Errorf("the pace counts %d slots held after the first's Finish, want the second's 1", held)
	}
	g.Finish(&second, false)
}
