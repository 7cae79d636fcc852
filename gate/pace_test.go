package gate

import (
	"math"
	"testing"
	"time"
)

// steady records releases every interval for span, from t0, and returns
// the instant of the last.
func steady(p *pace, t0 time.Time, interval, span time.Duration) time.Time {
	at := t0
	p.admitted(at) // one slot held throughout: released and taken again
	for ; at.Sub(t0) < span; at = at.Add(interval) {
		p.released(at)
		p.admitted(at)
	}
	return at.Add(-interval)
}

func TestPaceRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		interval time.Duration
		span     time.Duration
		after    time.Duration // beyond half an interval after the last release
		want     float64       // releases per second
		tol      float64       // relative
	}{
		// Unbiased from the start: 2 s of 10 a second read 10, not the
		// 1.8 a plain decayed count would have reached.
		{name: "10/s for 2s", interval: 100 * time.Millisecond, span: 2 * time.Second, want: 10, tol: 0.08},
		{name: "10/s for a minute", interval: 100 * time.Millisecond, span: time.Minute, want: 10, tol: 0.02},
		{name: "2/s for a minute", interval: 500 * time.Millisecond, span: time.Minute, want: 2, tol: 0.02},
		{name: "0.5/s for a minute", interval: 2 * time.Second, span: time.Minute, want: 0.5, tol: 0.1},
		// Releases stop: the rate falls by e every paceWindow.
		{name: "10/s, then 20 s of nothing", interval: 100 * time.Millisecond, span: time.Minute, after: 20 * time.Second,
			want: 10 * math.Exp(-2), tol: 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pace
			last := steady(&p, t0, tc.interval, tc.span)
			// Read half an interval after the last release (or later):
			// right at a release the count holds all of it.
			got := p.rate(last.Add(tc.interval/2 + tc.after))
			if math.Abs(got-tc.want) > tc.tol*tc.want {
				t.Errorf("rate = %.3f/s, want %.3f/s ± %.0f%%", got, tc.want, tc.tol*100)
			}
		})
	}
	// Idle is not slow: with no slot held, the rate stays what it was
	// when the last slot came back, and the next busy spell goes on from
	// there.
	var idle pace
	last := steady(&idle, t0, 100*time.Millisecond, time.Minute)
	idle.released(last) // the slot held comes back: nothing held
	if r := idle.rate(last.Add(2 * time.Minute)); math.Abs(r-10) > 0.5 {
		t.Errorf("after two idle minutes the rate is %.3f/s, want about 10/s", r)
	}
	idle.admitted(last.Add(2 * time.Minute))
	if r := idle.rate(last.Add(2*time.Minute + 20*time.Second)); math.Abs(r-10*math.Exp(-2)) > 0.5 {
		t.Errorf("20 s into a busy spell with no release the rate is %.3f/s, want about %.3f/s (decay counts again)", r, 10*math.Exp(-2))
	}
	var p pace
	if r := p.rate(t0); r != 0 {
		t.Errorf("rate before any release = %v, want 0", r)
	}
	p.released(t0)
	if r := p.rate(t0); r > 1.06 {
		t.Errorf("one release reads %v/s, want at most about 1/s (the first releases are spread over a second)", r)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		ahead int
		rate  float64
		want  time.Duration
	}{
		{ahead: 0, rate: 0, want: MinRetryAfter},    // nothing measured yet
		{ahead: 16, rate: 100, want: time.Second},   // 0.17 s, the floor
		{ahead: 16, rate: 4, want: 5 * time.Second}, // 17/4 = 4.25, rounded up
		{ahead: 16, rate: 2, want: 9 * time.Second}, // slower service, longer hint
		{ahead: 3, rate: 2, want: 2 * time.Second},  // exactly 2
		{ahead: 16, rate: 0.1, want: MaxRetryAfter}, // 170 s, the ceiling
		{ahead: 1 << 30, rate: 1e-300, want: MaxRetryAfter},
	} {
		if got := retryAfter(tc.ahead, tc.rate); got != tc.want {
			t.Errorf("retryAfter(%d, %v) = %v, want %v", tc.ahead, tc.rate, got, tc.want)
		}
	}
}
