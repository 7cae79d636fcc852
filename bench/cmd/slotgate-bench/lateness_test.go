package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestLateness(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		late     []time.Duration
		p50, p99 time.Duration
	}{
		{"none recorded", nil, 0, 0},
		{"early counts as on time", []time.Duration{-5 * ms}, lateStep, lateStep},
		{"on time", []time.Duration{0, 50 * time.Microsecond}, lateStep, lateStep},
		{"steps round up", []time.Duration{250 * time.Microsecond}, 300 * time.Microsecond, 300 * time.Microsecond},
		{"a late tail", append(repeat(0, 98), 7*ms, 9*ms), lateStep, 7*ms + lateStep},
		{"past the last step", []time.Duration{time.Second}, lateBuckets * lateStep, lateBuckets * lateStep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l lateness
			for _, d := range tt.late {
				l.record(d)
			}
			if got := l.quantile(0.5); got != tt.p50 {
				t.Errorf("p50 = %v, want %v", got, tt.p50)
			}
			if got := l.quantile(0.99); got != tt.p99 {
				t.Errorf("p99 = %v, want %v", got, tt.p99)
			}
			l.reset()
			if got := l.quantile(0.99); got != 0 {
				t.Errorf("after reset: p99 = %v, want 0", got)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

// TestEngineRecordsLateness: /stream's events are recorded against their
// schedule, /_stats reports them and /_reset forgets them.
func TestEngineRecordsLateness(t *testing.T) {
	ctx := context.Background()
	eng := startTestEngine(t)
	if st, _ := eng.stats(ctx); st.LateP50 != 0 || st.LateP99 != 0 {
		t.Fatalf("before any stream: %+v, want no lateness", st)
	}
	resp, err := http.Get("http://" + eng.addr + "/stream?n=3&s=0")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // the stats tell
	resp.Body.Close()
	st, err := eng.stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two gaps were slept: each counts, at least in the first step.
	if st.LateP50 < lateStep.Microseconds() || st.LateP99 < st.LateP50 {
		t.Errorf("after a stream of 3 events: %+v, want p50 ≥ %d µs and p99 ≥ p50", st, lateStep.Microseconds())
	}
	if err := eng.reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := eng.stats(ctx); st.LateP50 != 0 || st.LateP99 != 0 {
		t.Errorf("after reset: %+v, want no lateness", st)
	}
}
