package main

import (
	"regexp"
	"testing"
)

func TestParseFocusShare(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      float64
		ok        bool
	}{
		{"seconds", "Type: cpu\nActive filters:\n   focus=x\nShowing nodes accounting for 0.28s, 23.33% of 1.20s total\n", 23.33, true},
		{"milliseconds", "Showing nodes accounting for 980ms, 81.67% of 1200ms total\nShowing top 1 nodes out of 10\n", 81.67, true},
		{"no match", "Focus expression matched no samples\nShowing nodes accounting for 0, 0% of 1.20s total\n", 0, true},
		{"missing", "Type: cpu\n", 0, false},
		{"over 100", "Showing nodes accounting for 1s, 120% of 1s total\n", 0, false},
	} {
		got, err := parseFocusShare(tc.out)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %v, %v; want %v, ok %v", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseFocusShare(f *testing.F) {
	f.Add("Showing nodes accounting for 0.28s, 23.33% of 1.20s total\n")
	f.Fuzz(func(t *testing.T, out string) {
		v, err := parseFocusShare(out)
		if err == nil && (v < 0 || v > 100) {
			t.Fatalf("share %v outside 0–100", v)
		}
	})
}

// TestProfileFocus: each focus expression compiles (pprof takes Go's
// regexp syntax) and matches the functions it is meant to.
func TestProfileFocus(t *testing.T) {
	for name, want := range map[string][]string{
		"counting CPU %": {"github.com/slotgate/slotgate/load/estimate.(*PromptCounter).Write", "github.com/slotgate/slotgate/proxy.(*tokenBody).update"},
		"prompt CPU %":   {"github.com/slotgate/slotgate/load/estimate.(*PromptCounter).Close"},
		"SSE CPU %":      {"github.com/slotgate/slotgate/load/estimate.(*StreamCounter).Write", "github.com/slotgate/slotgate/proxy.(*tokenBody).update"},
	} {
		re, err := regexp.Compile(profileFocus[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, fn := range want {
			if !re.MatchString(fn) {
				t.Errorf("%s: %q does not match %s", name, profileFocus[name], fn)
			}
		}
		// The readers that wrap the counters also read the socket: a
		// focus on them would count its system calls as counting.
		for _, fn := range []string{"net/http.(*conn).serve", "github.com/slotgate/slotgate/proxy.(*tokenBody).Read",
			"github.com/slotgate/slotgate/load/estimate.(*PromptReader).Read"} {
			if re.MatchString(fn) {
				t.Errorf("%s matches %s", name, fn)
			}
		}
	}
	if len(profileFocus) != len(profileMetrics) {
		t.Errorf("%d focus expressions for %d metrics", len(profileFocus), len(profileMetrics))
	}
}
