package loadgen

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestArrivals: one seed gives one schedule; the gaps are exponential with
// mean 1/rate (checked on a fixed seed, so not flaky).
func TestArrivals(t *testing.T) {
	start := time.Unix(1000, 0)
	const rate, n = 200.0, 20000
	a, b, c := newArrivals(9, rate, start), newArrivals(9, rate, start), newArrivals(10, rate, start)
	var same, differ = true, false
	prev := start
	var sum, sumSq float64
	for range n {
		x, y, z := a.next(), b.next(), c.next()
		same = same && x.Equal(y)
		differ = differ || !x.Equal(z)
		if !x.After(prev) && !x.Equal(prev) {
			t.Fatalf("arrival %v before the previous %v", x, prev)
		}
		g := x.Sub(prev).Seconds()
		sum, sumSq = sum+g, sumSq+g*g
		prev = x
	}
	if !same || !differ {
		t.Errorf("seed 9 twice same = %v; seeds 9 and 10 differ = %v; want true, true", same, differ)
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	if math.Abs(mean*rate-1) > 0.05 || math.Abs(sd*rate-1) > 0.05 {
		t.Errorf("gap mean %.5fs, stddev %.5fs; want both about %.5fs (exponential)", mean, sd, 1/rate)
	}
}

// TestIssuer hands out exactly limit indexes, in order, and stops issuing
// at the last.
func TestIssuer(t *testing.T) {
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	iss := &issuer{ctx: ctx, stop: stop, limit: 3}
	for want := range int64(3) {
		if ctx.Err() != nil {
			t.Fatalf("issuing stopped before index %d", want)
		}
		i, ok := iss.claim()
		if !ok || i != want {
			t.Fatalf("claim = %d, %v; want %d, true", i, ok, want)
		}
	}
	if ctx.Err() == nil {
		t.Error("issuing did not stop at the last index")
	}
	if _, ok := iss.claim(); ok {
		t.Error("claim after the limit succeeded")
	}
}

func TestProgressLine(t *testing.T) {
	s := snapshot{sent: 10, done: 8, ok: 6, rejected: 1, failed: 1, inFlight: 2}
	got := progressLine(s, 1500*time.Millisecond, 4.25)
	want := "    1.5s  sent 10  done 8  ok 6  rejected 1  errors 1  in flight 2  4.2 req/s"
	if got != want {
		t.Errorf("progressLine = %q\nwant           %q", got, want)
	}
	s.dropped = 3
	if got := progressLine(s, 0, 0); !strings.HasSuffix(got, "  dropped 3") {
		t.Errorf("progressLine with drops = %q", got)
	}
}

// TestProgressWrite: a plain line per report off a terminal; on one, one
// line rewritten with \r, padded over a longer previous line, and ended by
// a newline when the run ends.
func TestProgressWrite(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var b bytes.Buffer
		rec := newRecorder()
		start := time.Unix(0, 0)
		g := &Generator{opts: Options{Progress: &b, ProgressInterval: time.Second, Terminal: terminal}}
		p := g.newProgress(rec, start)
		for i := range 12 {
			rec.begin()
			rec.record(result{outcome: "200", answered: true, success: true, ok: true})
			p.write(start.Add(time.Duration(i+1) * time.Second))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p.run(ctx)
		out := b.String()
		if !terminal {
			if n := strings.Count(out, "\n"); n != 12 || strings.Contains(out, "\r") {
				t.Errorf("off a terminal: %d lines, want 12 and no \\r:\n%q", n, out)
			}
			continue
		}
		if p.interval != terminalInterval {
			t.Errorf("terminal interval = %v, want %v", p.interval, terminalInterval)
		}
		if n := strings.Count(out, "\r"); n != 13 || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("on a terminal: %d rewrites, want 13, and one final newline:\n%q", n, out)
		}
		// "done 9" was written over by the longer "done 10": same length
		// for the rest, so padding keeps every rewrite at least as long.
		parts := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
		for i := 1; i < len(parts); i++ {
			if len(parts[i]) < len(parts[i-1]) {
				t.Errorf("rewrite %d is shorter than the line it covers: %q after %q", i, parts[i], parts[i-1])
			}
		}
	}
}

func TestProgressOff(t *testing.T) {
	for _, o := range []Options{{}, {Progress: &bytes.Buffer{}}, {ProgressInterval: time.Second}} {
		g := &Generator{opts: o}
		if p := g.newProgress(newRecorder(), time.Now()); p != nil {
			t.Errorf("progress on for %+v", o)
		}
	}
}
