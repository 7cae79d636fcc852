package bounded_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/bounded"
)

// recorder is a testing.TB whose Fatalf records the failure.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestTrueWaitsForCond: Wait.True returns once cond holds, having asked again
// until then, and fails nothing.
func TestTrueWaitsForCond(t *testing.T) {
	var calls atomic.Int32
	r := &recorder{TB: t}
	bounded.Wait{Within: 10 * time.Second, Every: time.Millisecond}.True(r, "the third call", func() bool { return calls.Add(1) >= 3 })
	if r.failed != "" {
		t.Errorf("True failed %q for a condition that came to hold", r.failed)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("cond called %d times, want 3 (until it held)", n)
	}
}

// TestTrueFailsPastItsBound: a condition that never holds fails the
// test, naming the wait and its bound, once the bound has passed.
func TestTrueFailsPastItsBound(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	bounded.Wait{Within: 20 * time.Millisecond, Every: time.Millisecond}.True(r, "a thing that never comes", func() bool { return false })
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("True gave up after %v, before its 20ms bound", took)
	}
	if !strings.Contains(r.failed, "20ms") || !strings.Contains(r.failed, "a thing that never comes") {
		t.Errorf("failure %q, want one naming the bound and the wait", r.failed)
	}
}
