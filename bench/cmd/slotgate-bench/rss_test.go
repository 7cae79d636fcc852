package main

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

func TestStatPIDs(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		pid, ppid  int
		wantErr    bool
	}{
		{"plain", "1234 (haproxy) S 1200 1234 1200 0 -1", 1234, 1200, false},
		{"spaces and parens in comm", "77 (a) b (c)) R 5 77 5", 77, 5, false},
		{"no comm", "77 S 5", 0, 0, true},
		{"cut short", "77 (x) S", 0, 0, true},
	} {
		pid, ppid, err := statPIDs(tc.stat)
		if pid != tc.pid || ppid != tc.ppid || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %d, %d, %v; want %d, %d, error %v", tc.name, pid, ppid, err, tc.pid, tc.ppid, tc.wantErr)
		}
	}
}

func TestVmRSS(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         int
		wantErr      bool
	}{
		{"present", "Name:\thaproxy\nVmHWM:\t   30000 kB\nVmRSS:\t   23272 kB\nRssAnon:\t 1 kB\n", 23272, false},
		{"zombie", "Name:\tx\nState:\tZ (zombie)\n", 0, true},
		{"odd unit", "VmRSS:\t 12 MB\n", 0, true},
	} {
		got, err := vmRSS(tc.status)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestDescendants(t *testing.T) {
	kids := map[int][]int{1: {10, 20}, 10: {11}, 11: {12}, 30: {31}}
	for _, tc := range []struct {
		pid  int
		want []int
	}{
		{10, []int{10, 11, 12}},
		{1, []int{1, 10, 20, 11, 12}},
		{31, []int{31}},
	} {
		if got := descendants(tc.pid, kids); !slices.Equal(got, tc.want) {
			t.Errorf("descendants(%d) = %v, want %v", tc.pid, got, tc.want)
		}
	}
}

func TestTreeRSSOfSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	kib, err := treeRSS(os.Getpid())
	if err != nil || kib <= 0 {
		t.Fatalf("treeRSS(self) = %d, %v; want a positive size", kib, err)
	}
}

// TestRSSWhileOpen: the reading waits for every stream to be open, then
// takes readings until the streams end, at most rssSamples, and returns
// their median; direct (pid 0) has none; a context ended first is an
// error.
func TestRSSWhileOpen(t *testing.T) {
	opened, ended := make(chan struct{}), make(chan struct{})
	close(opened)
	close(ended)
	if r := rssWhileOpen(t.Context(), opened, ended, os.Getpid()); r.err != nil || r.kib <= 0 {
		t.Errorf("this process's RSS with the streams over at once: %d KiB, %v; want one reading", r.kib, r.err)
	}
	running := make(chan struct{})
	start := time.Now()
	if r := rssWhileOpen(t.Context(), opened, running, os.Getpid()); r.err != nil || r.kib <= 0 {
		t.Errorf("this process's RSS while the streams run: %d KiB, %v", r.kib, r.err)
	}
	if d := time.Since(start); d < (rssSamples-1)*rssEvery {
		t.Errorf("the readings took %v, want %d of them %v apart", d, rssSamples, rssEvery)
	}
	if r := rssWhileOpen(t.Context(), opened, ended, 0); r.err != nil || r.kib != 0 {
		t.Errorf("direct: %d KiB, %v; want none", r.kib, r.err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if r := rssWhileOpen(ctx, make(chan struct{}), ended, os.Getpid()); r.err == nil {
		t.Error("a context ended before the streams opened: want its error")
	}
}
