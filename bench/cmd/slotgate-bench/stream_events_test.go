package main

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStreamGap(t *testing.T) {
	for _, s := range []int{0, 1, 7, 4095, -3} {
		var total time.Duration
		for i := 1; i <= 21; i++ {
			g := streamGap(s, i)
			if g < streamGapMin || g > streamGapMax {
				t.Fatalf("streamGap(%d, %d) = %v, outside %v–%v", s, i, g, streamGapMin, streamGapMax)
			}
			total += g
		}
		if mean := total / 21; mean != 20*time.Millisecond {
			t.Errorf("stream %d: mean gap over 21 events %v, want 20ms", s, mean)
		}
	}
	if streamGap(0, 1) == streamGap(1, 1) {
		t.Error("streams 0 and 1 have the same first gap: thousands of streams would send in lockstep")
	}
}

func TestStreamEvents(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{3 * time.Second, 150}, {10 * time.Millisecond, 2}, {0, 2}} {
		if got := streamEvents(tc.d); got != tc.want {
			t.Errorf("streamEvents(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestParseSeq(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		seq        int
		ok         bool
	}{
		{"first event", string(appendEvent(nil, 0)), 0, true},
		{"later event", string(appendEvent(nil, 4711)), 4711, true},
		{"done", "data: [DONE]\n", 0, false},
		{"blank", "\n", 0, false},
		{"comment", ": keep-alive\n", 0, false},
		{"no digits", `data: {"seq":,"id":1}`, 0, false},
		{"no comma", `data: {"seq":12}`, 0, false},
		{"sign", `data: {"seq":-1,"id":1}`, 0, false},
		{"too long", `data: {"seq":1234567890,"id":1}`, 0, false},
		{"cut", `data: {"seq":12`, 0, false},
		{"other field first", `data: {"id":"x","seq":1,}`, 0, false},
	} {
		seq, ok := parseSeq([]byte(tc.line))
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("%s: parseSeq(%q) = %d, %v; want %d, %v", tc.name, tc.line, seq, ok, tc.seq, tc.ok)
		}
	}
}

func FuzzParseSeq(f *testing.F) {
	f.Add(appendEvent(nil, 12))
	f.Add([]byte("data: [DONE]\n"))
	f.Add([]byte(`data: {"seq":999999999,`))
	f.Fuzz(func(t *testing.T, line []byte) {
		seq, ok := parseSeq(line)
		if !ok {
			return
		}
		if seq < 0 || seq > 999999999 {
			t.Fatalf("parseSeq(%q) = %d: out of range", line, seq)
		}
		// What it read is what appendEvent writes for that number.
		if got, ok := parseSeq(appendEvent(nil, seq)); !ok || got != seq {
			t.Fatalf("round trip of %d: %d, %v", seq, got, ok)
		}
	})
}

func TestSeqCheck(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		seen                      []int
		sent                      int
		received, lost, reordered int
	}{
		{"in order", []int{0, 1, 2, 3}, 4, 4, 0, 0},
		{"one skipped", []int{0, 1, 3}, 4, 3, 1, 0},
		{"tail cut", []int{0, 1}, 4, 2, 2, 0},
		{"none", nil, 3, 0, 3, 0},
		{"swapped", []int{0, 2, 1, 3}, 4, 4, 1, 1},
		{"duplicate", []int{0, 1, 1, 2}, 3, 4, 0, 1},
	} {
		var c seqCheck
		for _, s := range tc.seen {
			c.see(s)
		}
		c.end(tc.sent)
		if c.received != tc.received || c.lost != tc.lost || c.reordered != tc.reordered {
			t.Errorf("%s: received %d, lost %d, reordered %d; want %d, %d, %d",
				tc.name, c.received, c.lost, c.reordered, tc.received, tc.lost, tc.reordered)
		}
	}
}

func TestScanEvents(t *testing.T) {
	ev := func(seqs ...int) string {
		var b []byte
		for _, s := range seqs {
			b = appendEvent(b, s)
		}
		return string(b)
	}
	long := "data: " + strings.Repeat("x", 2000) + "\n\n"
	for _, tc := range []struct {
		name, body string
		want       []int
		err        bool
	}{
		{"whole", ev(0, 1, 2) + "data: [DONE]\n\n", []int{0, 1, 2}, false},
		{"long foreign line", ev(0) + long + ev(1) + "data: [DONE]\n\n", []int{0, 1}, false},
		{"cut", ev(0, 1), []int{0, 1}, true},
	} {
		var got []int
		err := scanEvents(bufio.NewReaderSize(strings.NewReader(tc.body), 512), func(s int) { got = append(got, s) })
		if !slices.Equal(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("%s: events %v, error %v; want %v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestAggregateStreams(t *testing.T) {
	ms := time.Millisecond
	got := []oneStream{
		{ttft: 2 * ms, gaps: []time.Duration{20 * ms, 10 * ms}, held: 1, check: seqCheck{next: 3, received: 3}},
		{ttft: 1 * ms, gaps: []time.Duration{30 * ms}, held: 1, check: seqCheck{next: 3, received: 2, lost: 1}, err: errors.New("stream cut")},
		{check: seqCheck{next: 3, lost: 3}, err: errors.New("dial")},
	}
	a := aggregateStreams(got)
	if a.events != 5 || a.lost != 4 || a.complete != 1 || a.errors != 2 || a.firstErr.Error() != "stream cut" {
		t.Errorf("aggregate %+v: want 5 events, 4 lost, 1 complete, 2 errors, first error stream cut", a)
	}
	if !slices.Equal(a.ttft, []time.Duration{ms, 2 * ms}) || !slices.Equal(a.itl, []time.Duration{10 * ms, 20 * ms, 30 * ms}) {
		t.Errorf("ttft %v, itl %v: want the streams that saw an event, sorted", a.ttft, a.itl)
	}
	if !slices.Equal(a.heldITL, []time.Duration{10 * ms}) {
		t.Errorf("held itl %v: want the gaps from each stream's held on", a.heldITL)
	}
	m := a.metrics(time.Second)
	if m["events/s"] != 5 || m["ITL p99 ms"] != 30 || m[heldITLP99] != 10 || m["lost"] != 4 {
		t.Errorf("metrics %v", m)
	}
}
