package main

import (
	"strings"
	"testing"
)

func TestBusyTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat  string
		busy, total int64
		ok          bool
	}{
		{"typical", "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 161, 1181, true},
		{"old kernel, 8 counters", "cpu 1 1 1 9 9 1 1 1\n", 6, 24, true},
		{"too few", "cpu 1 2 3\n", 0, 0, false},
		{"not cpu", "intr 1 2 3 4 5 6 7 8 9\n", 0, 0, false},
		{"negative", "cpu 1 -2 3 4 5 6 7 8 9\n", 0, 0, false},
	} {
		busy, total, err := busyTicks(tc.stat)
		if (err == nil) != tc.ok || busy != tc.busy || total != tc.total {
			t.Errorf("%s: %d, %d, %v; want %d, %d, ok %v", tc.name, busy, total, err, tc.busy, tc.total, tc.ok)
		}
	}
	if got := machineBusy(cpuTicks{busy: 10, total: 100}, cpuTicks{busy: 60, total: 200}); got != 0.5 {
		t.Errorf("machineBusy = %v, want 0.5", got)
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		a, b cpuTicks
		want float64
	}{
		{cpuTicks{self: 10, busy: 100}, cpuTicks{self: 30, busy: 200}, 0.2},
		{cpuTicks{self: 10, busy: 100}, cpuTicks{self: 30, busy: 100}, 0}, // idle machine
		{cpuTicks{}, cpuTicks{self: 50, busy: 10}, 1},                     // readings a tick apart
	} {
		if got := share(tc.a, tc.b); got != tc.want {
			t.Errorf("share(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if _, err := readCPUTicks(); err != nil {
		t.Errorf("readCPUTicks on this machine: %v", err)
	}
}

func TestClientWarnings(t *testing.T) {
	rs := []ScenarioResult{{Name: "streams-4096", Rows: []Row{
		{Target: "direct", Metrics: map[string]Summary{clientCPUMetric: {Median: 45}}},
		{Target: "slotgate", Metrics: map[string]Summary{clientCPUMetric: {Median: 30}}},
	}}, {Name: "fast-c1", Rows: []Row{{Target: "direct", Metrics: map[string]Summary{"req/s": {Median: 90}}}}}}
	ws := clientWarnings(rs)
	if len(ws) != 1 || !strings.Contains(ws[0], "streams-4096 on direct") || !strings.Contains(ws[0], "45%") {
		t.Errorf("warnings %q: want one, for streams-4096 on direct at 45%%", ws)
	}
}

func TestNeedFiles(t *testing.T) {
	scs := []scenario{{name: "fast-c1"}, {name: "streams-256", streams: 256}, {name: "streams-4096", streams: 4096}}
	for _, tc := range []struct {
		name  string
		limit uint64
		named bool
		kept  int
		err   bool
	}{
		{"plenty", 20000, false, 3, false},
		{"low", 2000, false, 2, false},
		{"low, named", 2000, true, 0, true},
	} {
		kept, skipped, err := needFiles(scs, tc.limit, tc.named)
		if len(kept) != tc.kept || (err != nil) != tc.err {
			t.Errorf("%s: kept %d, skipped %v, error %v; want %d kept, error %v", tc.name, len(kept), skipped, err, tc.kept, tc.err)
		}
	}
	if lim, err := raiseFileLimit(); err != nil || lim == 0 {
		t.Errorf("raiseFileLimit: %d, %v", lim, err)
	}
}
