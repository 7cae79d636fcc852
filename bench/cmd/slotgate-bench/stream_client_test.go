package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunStreamsAgainstEngine runs the raw client against the real engine
// stand-in, in the test's process: every stream's events arrive, in
// order, 10–30 ms apart, and opened is closed.
func TestRunStreamsAgainstEngine(t *testing.T) {
	eng := startTestEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name            string
		streams, prompt int
	}{
		{"short prompts", 8, 0},
		{"long prompts", 3, longPromptBytes},
	} {
		spec := streamSpec{addr: eng.addr, streams: tc.streams, events: 4, body: streamBody(tc.prompt, 4), timeout: 10 * time.Second}
		opened := make(chan struct{})
		got := runStreams(ctx, spec, opened)
		select {
		case <-opened:
		default:
			t.Errorf("%s: opened not closed after every stream ended", tc.name)
		}
		a := aggregateStreams(got)
		if a.errors != 0 || a.complete != tc.streams || a.events != tc.streams*4 || a.lost != 0 || a.reordered != 0 {
			t.Fatalf("%s: %+v, first error %v; want %d complete streams of 4 events, none lost", tc.name, a, a.firstErr, tc.streams)
		}
		// One gap between each two events of a stream. (Their lengths
		// are not checked: the client can receive a late event and the
		// next on-time one close together, so a timed bound fails on a
		// loaded machine, as a fresh-clone make test showed.)
		if len(a.itl) != tc.streams*3 {
			t.Errorf("%s: %d gaps measured, want %d", tc.name, len(a.itl), tc.streams*3)
		}
		// The stream that opened last read all its gaps with every
		// stream open.
		if len(a.heldITL) < 3 || len(a.heldITL) > len(a.itl) {
			t.Errorf("%s: %d of %d gaps read with every stream open, want from 3 to all", tc.name, len(a.heldITL), len(a.itl))
		}
	}
}

func TestRunStreamsBadAnswer(t *testing.T) {
	eng := startTestEngine(t)
	// n=0 is refused by the engine with 400: every stream fails, all its
	// events counted lost.
	spec := streamSpec{addr: eng.addr, streams: 2, events: 0, body: streamBody(0, 1), timeout: 5 * time.Second}
	got := runStreams(context.Background(), spec, make(chan struct{}))
	for i, s := range got {
		if s.err == nil || !strings.Contains(s.err.Error(), "status 400") {
			t.Errorf("stream %d: error %v, want status 400", i, s.err)
		}
	}
}

func TestStreamBody(t *testing.T) {
	for _, n := range []int{0, 100, longPromptBytes} {
		b := streamBody(n, 7)
		if len(b) < n || !strings.Contains(string(b), `"stream":true`) || !strings.Contains(string(b), `"max_tokens":7`) {
			t.Errorf("streamBody(%d): %d bytes %.80q", n, len(b), b)
		}
	}
}

// TestPrimeEngine: the engine is primed with the scenario's streams, and
// an engine that cannot be reached fails the priming, which names the
// streams that failed.
func TestPrimeEngine(t *testing.T) {
	eng := startTestEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := scenario{streams: 16}
	if err := primeEngine(ctx, eng, sc); err != nil {
		t.Fatalf("priming the engine: %v", err)
	}
	st, err := eng.stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Received != 16 || st.MaxInFlight < 2 {
		t.Errorf("the engine received %d requests, %d at most at once, while primed; want the 16 streams, together", st.Received, st.MaxInFlight)
	}
	gone := &engineProc{addr: "127.0.0.1:1"}
	if err := primeEngine(ctx, gone, sc); err == nil || !strings.Contains(err.Error(), "16 of 16 streams failed") {
		t.Errorf("priming an engine that is not there: %v, want 16 of 16 streams failed", err)
	}
}
