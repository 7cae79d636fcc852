package gate_test

import (
	"strings"
	"testing"

	"github.com/slotgate/slotgate/gate"
)

func TestIDs(t *testing.T) {
	ids := gate.NewIDs()
	long := strings.Repeat("x", gate.MaxClientRequestID+1)
	tests := []struct {
		name, client string
		keep         bool
	}{
		{"the client's", "req-42", true},
		{"at the bound", strings.Repeat("x", gate.MaxClientRequestID), true},
		{"none", "", false},
		{"too long", long, false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ids.For(tc.client)
			if (got == tc.client) != tc.keep || got == "" {
				t.Errorf("For(%.20q) = %q, want the client's id kept: %t", tc.client, got, tc.keep)
			}
			if !tc.keep && seen[got] {
				t.Errorf("id %q made twice", got)
			}
			seen[got] = true
		})
	}
	if a, b := gate.NewIDs().For(""), gate.NewIDs().For(""); a == b {
		t.Errorf("two sources made the same first id %q", a)
	}
}

// TestIDsMadeUp: a made-up id is the source's prefix, a dash and the next
// number, in one allocation (the string's).
func TestIDsMadeUp(t *testing.T) {
	ids := gate.NewIDs()
	first := ids.For("")
	prefix, n, ok := strings.Cut(first, "-")
	if !ok || len(prefix) != 12 || strings.Trim(prefix, "0123456789abcdef") != "" || n != "1" {
		t.Fatalf("first id %q, want 12 hex digits, a dash and 1", first)
	}
	if second := ids.For(""); second != prefix+"-2" {
		t.Errorf("second id %q, want %s-2", second, prefix)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = ids.For("") }); allocs != 1 {
		t.Errorf("%v allocations a made-up id, want 1", allocs)
	}
}
