package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBin returns a folder holding empty files named as the demo's three
// programs, enough for parseOptions' check that they exist.
func fakeBin(t *testing.T) string {
	dir := t.TempDir()
	for _, name := range []string{"slotgate", "enginesim", "slotgate-loadgen"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestParseOptionsModeDefaults(t *testing.T) {
	bin := fakeBin(t)
	tests := []struct {
		name         string
		args         []string
		wantMode     string
		wantDuration time.Duration
		wantSpeedup  float64
	}{
		{"compare by default", nil, modeCompare, 15 * time.Second, 1},
		{"hammer keeps the original burst", []string{"--mode", "hammer"}, modeHammer, 8 * time.Second, 10},
		{"serve runs at GPU speed", []string{"--mode", "hammer", "--serve"}, modeHammer, 15 * time.Second, 1},
		{"explicit values win", []string{"--mode", "hammer", "--duration", "3s", "--speedup-ratio", "2"}, modeHammer, 3 * time.Second, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(append([]string{"--bin", bin}, tt.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.mode != tt.wantMode || o.duration != tt.wantDuration || o.speedup != tt.wantSpeedup {
				t.Errorf("mode %q, duration %v, speedup %v; want %q, %v, %v",
					o.mode, o.duration, o.speedup, tt.wantMode, tt.wantDuration, tt.wantSpeedup)
			}
		})
	}
}

func TestParseOptionsNamesEveryBadValue(t *testing.T) {
	bin := fakeBin(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"mode", []string{"--mode", "storm"}, []string{"--mode storm"}},
		{"waiting above slots", []string{"--slots", "2", "--waiting", "3"}, []string{"--waiting 3", "--slots (2)"}},
		{"several at once", []string{"--retry", "0", "--rate", "-1", "--deadline", "0s", "--queue", "1"},
			[]string{"--retry 0", "--rate -1", "--deadline 0s", "--queue 1"}},
		{"missing programs", []string{"--bin", filepath.Join(bin, "nowhere")}, []string{"run make build-all first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOptions(append([]string{"--bin", bin}, tt.args...), io.Discard)
			if err == nil {
				t.Fatalf("%v: no error", tt.args)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}
