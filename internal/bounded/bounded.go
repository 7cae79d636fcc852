// Package bounded gives tests a bounded wait for a condition they
// cannot step to: a real socket's close reaching the other side, a loop's
// goroutine having run. Each test package keeps its own bound and cadence
// in a Wait and names what it waits for; this is the loop they share.
// Only tests import it.
//
// Invariant: Wait.True returns only once cond held, and otherwise fails
// the test (Fatalf) once Within has passed.
package bounded

import (
	"testing"
	"time"
)

// Wait is a bounded wait: Within, asking again every Every.
type Wait struct {
	Within, Every time.Duration
}

// True calls cond until it holds, every w.Every, failing t with what if
// it still does not after w.Within.
func (w Wait) True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(w.Within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", w.Within, what)
			return
		}
		time.Sleep(w.Every)
	}
}
