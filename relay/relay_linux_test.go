package relay

import (
	"runtime"
	"testing"
)

// TestAutoLoops: not told, a relay runs two loops from two processors
// (one thread carrying every stream waits for a core more often than
// either of two), one per four processors from twelve, and one on one.
func TestAutoLoops(t *testing.T) {
	for _, tt := range []struct{ procs, want int }{
		{1, 1}, {2, 2}, {3, 2}, {4, 2}, {8, 2}, {11, 2}, {12, 3}, {16, 4}, {64, 16},
	} {
		if got := autoLoops(tt.procs); got != tt.want {
			t.Errorf("autoLoops(%d) = %d, want %d", tt.procs, got, tt.want)
		}
	}
}

// TestNewPicksAutoLoops: New(0) and New(-1) run autoLoops(GOMAXPROCS)
// loops; a number given is kept.
func TestNewPicksAutoLoops(t *testing.T) {
	for _, tt := range []struct{ procs, n, want int }{
		{1, 0, 1}, {2, 0, 2}, {2, -1, 2}, {4, 0, 2}, {12, 0, 3}, {2, 1, 1}, {1, 3, 3},
	} {
		prev := runtime.GOMAXPROCS(tt.procs)
		r, err := New(tt.n)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatalf("New(%d): %v", tt.n, err)
		}
		if got := r.Loops(); got != tt.want {
			t.Errorf("GOMAXPROCS %d, New(%d): %d loops, want %d", tt.procs, tt.n, got, tt.want)
		}
		r.closeLoops()
	}
}
