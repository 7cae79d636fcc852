package command

import (
	"strings"
	"testing"
)

// TestReadGOGC: the environment's GOGC as Go reads it, off or an
// integer; empty is none; anything Go would take silently as 100 stops
// start-up, naming the variable and its value.
func TestReadGOGC(t *testing.T) {
	for _, tt := range []struct {
		v, want, err string
	}{
		{v: "", want: ""},
		{v: "off", want: "off"},
		{v: "50", want: "50"},
		{v: "100", want: "100"},
		{v: "-1", want: "-1"},
		{v: "2147483647", want: "2147483647"},
		{v: "2147483648", err: `GOGC: must be off or an integer, the collector's percent, got "2147483648"`},
		{v: "OFF", err: `got "OFF"`},
		{v: "200%", err: `got "200%"`},
		{v: " 50", err: `got " 50"`},
		{v: "1e3", err: `got "1e3"`},
	} {
		got, err := readGOGC(map[string]string{"GOGC": tt.v})
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("GOGC=%q: %q, %v; want %q", tt.v, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("GOGC=%q: error %v, want one with %s", tt.v, err, tt.err)
		}
	}
	if got, err := readGOGC(nil); got != "" || err != nil {
		t.Errorf("no GOGC: %q, %v; want none", got, err)
	}
}
