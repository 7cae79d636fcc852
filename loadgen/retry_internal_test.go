package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestRetryWait: a Retry-After the SDKs honour is the wait, exactly;
// anything else falls back to the exponential backoff, capped at 8 s, with
// every draw within its jitter bounds and the draws spread across them.
func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	backoff := func(base time.Duration) [2]time.Duration { return [2]time.Duration{base * 3 / 4, base} }
	exact := func(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d} }
	for _, tc := range []struct {
		name       string
		n          int
		retryAfter string
		want       [2]time.Duration // bounds, both included
	}{
		{"seconds", 0, "2", exact(2 * time.Second)},
		{"seconds, spaces around", 3, " 7 ", exact(7 * time.Second)},
		{"seconds with a fraction", 0, "0.25", exact(250 * time.Millisecond)},
		{"the 60 s bound", 0, "60", exact(time.Minute)},
		{"HTTP date", 0, now.Add(3 * time.Second).Format(http.TimeFormat), exact(3 * time.Second)},
		{"absent, first retry", 0, "", backoff(500 * time.Millisecond)},
		{"absent, second retry", 1, "", backoff(time.Second)},
		{"absent, fourth retry", 3, "", backoff(4 * time.Second)},
		{"absent, capped at 8 s", 4, "", backoff(8 * time.Second)},
		{"absent, capped far out", 62, "", backoff(8 * time.Second)},
		{"above 60 s: backoff", 0, "61", backoff(500 * time.Millisecond)},
		{"zero: backoff", 1, "0", backoff(time.Second)},
		{"date in the past: backoff", 0, now.Add(-time.Second).Format(http.TimeFormat), backoff(500 * time.Millisecond)},
		{"date too far: backoff", 0, now.Add(2 * time.Minute).Format(http.TimeFormat), backoff(500 * time.Millisecond)},
		{"negative: backoff", 0, "-1", backoff(500 * time.Millisecond)},
		{"exponent: backoff", 0, "1e1", backoff(500 * time.Millisecond)},
		{"infinity: backoff", 0, "Inf", backoff(500 * time.Millisecond)},
		{"two dots: backoff", 0, "1.2.3", backoff(500 * time.Millisecond)},
		{"a word: backoff", 0, "soon", backoff(500 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			lo, hi := tc.want[1], tc.want[0]
			for range 2000 {
				d := retryWait(tc.n, tc.retryAfter, now, rng)
				if d < tc.want[0] || d > tc.want[1] {
					t.Fatalf("retryWait(%d, %q) = %v, want from %v to %v", tc.n, tc.retryAfter, d, tc.want[0], tc.want[1])
				}
				lo, hi = min(lo, d), max(hi, d)
			}
			// The jitter spans its range: 2000 draws leave no tenth of it
			// empty at either end.
			if span := tc.want[1] - tc.want[0]; span > 0 && (lo > tc.want[0]+span/10 || hi < tc.want[1]-span/10) {
				t.Errorf("draws from %v to %v: the jitter does not span %v to %v", lo, hi, tc.want[0], tc.want[1])
			}
		})
	}
}

// TestRetryWaitSeeded: one seed, one sequence of waits.
func TestRetryWaitSeeded(t *testing.T) {
	a, b := rand.New(rand.NewPCG(7, 9)), rand.New(rand.NewPCG(7, 9))
	for n := range 10 {
		if x, y := retryWait(n, "", time.Time{}, a), retryWait(n, "", time.Time{}, b); x != y {
			t.Fatalf("retry %d: %v and %v from one seed", n, x, y)
		}
	}
}

// TestSleep: the wait lasts its duration, and a context that ends first
// ends it then; the fake clock of a synctest bubble measures both.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !sleep(t.Context(), 1500*time.Millisecond) {
			t.Fatal("sleep reported its context ended")
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Errorf("slept %v, want 1.5s", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if sleep(ctx, time.Hour) {
			t.Fatal("sleep outlived its context")
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("slept %v, want 1s: the context's end", got)
		}
	})
}

// FuzzParseRetryAfter: any header value parses without a panic, and a
// wait it honours is within (0, 60 s].
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "1", "0.5", "60", "61", "-1", "1e3", "NaN", "0x10", ".", "1.",
		now.Add(5 * time.Second).Format(http.TimeFormat), "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if ok && (d <= 0 || d > maxRetryAfter) {
			t.Errorf("parseRetryAfter(%q) = %v, honoured, outside (0, %v]", s, d, maxRetryAfter)
		}
	})
}
