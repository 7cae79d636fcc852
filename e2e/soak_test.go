package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/soak"
)

// TestSoak runs the chaos soak (package soak) against the binaries
// TestMain built, with the race detector when the tests run with it: 2
// minutes of load, 20 s with -short, or SLOTGATE_SOAK_DURATION. It fails
// on any broken invariant and logs the report either way; the processes'
// logs are kept in the test's temporary directory only while it runs, so
// a failure logs slotgate's last lines.
func TestSoak(t *testing.T) {
	duration := 2 * time.Minute
	if testing.Short() {
		duration = 20 * time.Second
	}
	if s := os.Getenv("SLOTGATE_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SLOTGATE_SOAK_DURATION=%q: want a positive Go duration", s)
		}
		duration = d
	}
	out := t.TempDir()
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), duration+3*time.Minute)
	defer cancel()
	rep, err := soak.Run(ctx, soak.Options{
		BinDir: binDir, OutDir: out, Duration: duration, Seed: 1, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("soak: %v\nprogress:\n%s", err, progress.String())
	}
	var report strings.Builder
	if err := rep.Write(&report); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak of %s:\n%s", duration, report.String())
	if !rep.OK() {
		t.Errorf("%d invariants broken; progress:\n%s\nslotgate's last lines:\n%s", len(rep.Violations), progress.String(),
			soakLogTail(filepath.Join(out, "slotgate.log"), 40))
	}
	if rep.Requests == 0 || rep.EngineRestarts == 0 {
		t.Errorf("the soak sent %d requests and restarted the engine %d times; want some of each", rep.Requests, rep.EngineRestarts)
	}
}

// soakLogTail returns the last n lines of the file at path.
func soakLogTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
