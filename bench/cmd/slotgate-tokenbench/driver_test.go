package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDriverEndToEnd runs the driver itself for a few seconds per
// configuration at a tiny rate, against real enginesim and slotgate
// binaries built from this tree, and checks that every configuration ran,
// that each row adds up (sent = served + refused + timed out + failed,
// per class, and the classes together are the workload's arrivals), that
// the light load was served, and that the JSON was written.
func TestDriverEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds slotgate and enginesim and runs four configurations for about 20 s")
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := buildBinaries(ctx, bin); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o, err := parseOptions([]string{"--bin", bin, "--out", out, "--duration", "2s", "--rate", "5",
		"--huge-fraction", "0.3", "--huge-prompt", "2000-3000", "--prefill-tokens", "2500",
		"--deadline", "20s", "--seed", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := run(ctx, o, []string{"slotgate-tokenbench", "test"}, &table); err != nil {
		t.Fatalf("%v\n%s", err, table.String())
	}
	t.Log(table.String())
	arrivals := plan(o.workload)
	res := readResults(t, out)
	if len(res.Configs) != len(configKeys) {
		t.Fatalf("%d configurations in the results, want %d", len(res.Configs), len(configKeys))
	}
	for _, c := range res.Configs {
		m := c.Median
		for _, s := range []classSummary{m.Short, m.Huge} {
			if s.Sent != s.Served+s.Refused+s.TimedOut+s.Failed {
				t.Errorf("%s: %+v does not add up", c.Name, s)
			}
		}
		if got, want := m.Short.Sent+m.Huge.Sent, float64(len(arrivals)); got != want {
			t.Errorf("%s: %v sent, want the %v arrivals", c.Name, got, want)
		}
		if m.Short.Served != m.Short.Sent || m.Huge.Served != m.Huge.Sent || m.Short.TTFTP50 <= 0 {
			t.Errorf("%s: at 5/s everything should be served: short %+v, huge %+v", c.Name, m.Short, m.Huge)
		}
		if !strings.Contains(table.String(), "| "+c.Name+" |") {
			t.Errorf("no row for %s in the table", c.Name)
		}
	}
}

func readResults(t *testing.T, dir string) results {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*-tokens.json"))
	if len(paths) != 1 {
		t.Fatalf("results files in %s: %v, want one", dir, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestParseOptionsNamesEveryBadValue(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"configs", []string{"--configs", "n,x"}, []string{`--configs n,x: "x" is not one of n, nw, np, nwp`}},
		{"several at once", []string{"--reps", "0", "--rate", "-1", "--huge-fraction", "2", "--deadline", "0s"},
			[]string{"--reps 0", "--rate -1", "--huge-fraction 2", "--deadline 0"}},
		{"a span", []string{"--huge-prompt", "9-3"}, []string{`"9-3": want MIN-MAX`}},
		{"missing programs", []string{"--bin", "/nowhere"}, []string{"--bin /nowhere", "go build -o /nowhere/ ./cmd/slotgate"}},
		{"arguments", []string{"extra"}, []string{`unexpected arguments ["extra"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOptions(tt.args, io.Discard)
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

func TestParseOptionsDefaults(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(o.selected()); got != 4 {
		t.Errorf("%d configurations by default, want 4", got)
	}
	if o.engine.MaxModelLen < o.workload.HugePrompt.Max+o.workload.HugeOutput {
		t.Errorf("max-model-len %d cannot hold the longest huge prompt %d", o.engine.MaxModelLen, o.workload.HugePrompt.Max)
	}
	want := []string{"N=16 Q=64", "N=16 W=4 Q=64", "N=16 P=8192 Q=64", "N=16 W=4 P=8192 Q=64"}
	for i, c := range o.selected() {
		if c.Name != want[i] {
			t.Errorf("configuration %d is %q, want %q", i, c.Name, want[i])
		}
	}
}
