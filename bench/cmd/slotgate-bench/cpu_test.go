package main

import (
	"os"
	"testing"
	"time"
)

func TestStatTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       int64
		ok         bool
	}{
		{"plain", "42 (slotgate) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 1 2 3", 325, true},
		{"comm with spaces and parentheses", "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0", 7, true},
		{"cut short", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 3", 0, false},
		{"no comm", "7 x R 1", 0, false},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 3 x", 0, false},
	} {
		got, err := statTicks(tc.stat)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: statTicks = %d, %v; want %d, ok %v", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

// TestTreeCPUGrows: this process's CPU time reads, and grows with work.
func TestTreeCPUGrows(t *testing.T) {
	before, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		after, err := treeCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Error("the process's CPU time did not grow over 5 s of work")
}
