package soak

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLimitHistoryMaxSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var h limitHistory
	h.record(at(0), 4)
	h.record(at(10), 8)
	h.record(at(20), 2)
	h.record(at(30), 3)
	for _, tc := range []struct {
		since int
		want  int
	}{
		{-5, 8}, {0, 8}, {5, 8}, {10, 8}, {15, 8}, // 8 is in force at 15
		{20, 3}, {25, 3}, {30, 3}, {99, 3}, // only 2 then 3 from 20 on
	} {
		if got := h.maxSince(at(tc.since)); got != tc.want {
			t.Errorf("maxSince(%ds) = %d, want %d", tc.since, got, tc.want)
		}
	}
	if got := h.largest(); got != 8 {
		t.Errorf("largest() = %d, want 8", got)
	}
}

func TestActiveGaugeReportsExcess(t *testing.T) {
	var vs violations
	g := &activeGauge{vs: &vs, bound: func() int { return 2 }}
	g.enter()
	g.enter()
	if l := vs.list(); len(l) != 0 {
		t.Fatalf("violations at the bound: %v", l)
	}
	g.enter()
	g.leave()
	g.leave()
	g.leave()
	l := vs.list()
	if len(l) != 1 || l[0].Invariant != InvClientConcurrency || g.peak.Load() != 3 || g.n.Load() != 0 {
		t.Fatalf("violations %v, peak %d, n %d; want one %s, peak 3, n 0", l, g.peak.Load(), g.n.Load(), InvClientConcurrency)
	}
}

func TestEngineObservedReportsEachExcessOnce(t *testing.T) {
	d := &driver{}
	start := time.Now().Add(-time.Minute)
	d.hist.record(start, 4)
	d.engineObserved(4, start, "polled")
	d.engineObserved(5, start, "polled")
	d.engineObserved(5, start, "polled")
	d.engineObserved(6, start, "final stats")
	l := d.vs.list()
	if len(l) != 2 || !strings.Contains(l[0].Detail, "ran 5 requests at once") || !strings.Contains(l[1].Detail, "ran 6") {
		t.Fatalf("violations %v, want one for 5 and one for 6", l)
	}
	if d.peakEngine.Load() != 6 {
		t.Errorf("peak %d, want 6", d.peakEngine.Load())
	}
}

func TestParseAccessLog(t *testing.T) {
	log := `{"level":"info","logger":"slotgate","msg":"listening","proxy":"127.0.0.1:1"}
{"level":"info","ts":"x","logger":"slotgate.access","msg":"request","request_id":"a","method":"POST","status":200,"outcome":"admitted_direct"}
not json at all, from a panic
{"level":"info","logger":"slotgate.access","msg":"request","request_id":"b","status":529,"outcome":"rejected_capacity"}
`
	got, err := parseAccessLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []LogEntry{{"a", 200, "admitted_direct"}, {"b", 529, "rejected_capacity"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := parseAccessLog(strings.NewReader(`{"logger":"slotgate.access","msg":"request","status":"x"}` + "\n")); err == nil {
		t.Error("a broken access-log line parsed without error")
	}
}

func TestTapKeepsLinesAcrossWrites(t *testing.T) {
	f, err := createTemp(t)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{w: f, keep: func(b []byte) bool { return strings.Contains(string(b), "listening") }, change: make(chan struct{})}
	for _, part := range []string{`{"msg":"list`, "ening\",\"a\":1}\nother\npanic: boom\n", `{"msg":"listening","a":2}`} {
		if _, err := tp.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	tp.close()
	if got, _, closed := tp.find("listening"); got != `{"msg":"listening","a":2}` || !closed {
		t.Errorf("find = %q, closed %v; want the last listening line, closed", got, closed)
	}
	if a := tp.alarming(); len(a) != 1 || a[0] != "panic: boom" {
		t.Errorf("alarming() = %q, want the panic line", a)
	}
}

func createTemp(t *testing.T) (*os.File, error) {
	f, err := os.CreateTemp(t.TempDir(), "tap")
	if err == nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}

// TestProgressFromManyGoroutines: the load loop and the chaos goroutine
// report at the same time into a Progress that is not safe for concurrent
// writes (the e2e test's strings.Builder); under the race detector an
// unguarded write fails this test, and every line must arrive whole.
func TestProgressFromManyGoroutines(t *testing.T) {
	var out strings.Builder
	d := &driver{opts: Options{Progress: &out}}
	const writers, lines = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				d.progress("writer %d line %d", w, i)
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		if !strings.HasPrefix(l, "soak: writer ") {
			t.Errorf("mangled line %q", l)
		}
	}
}
