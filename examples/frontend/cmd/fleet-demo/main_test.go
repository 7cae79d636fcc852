package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"slotgate", "enginesim", "slotgate-loadgen", "frontend"} {
		if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "defaults"},
		{name: "no binaries", args: []string{"--bin", t.TempDir()}, wantErr: "run make demo-fleet"},
		{name: "workers", args: []string{"--workers", "0"}, wantErr: "--workers 0"},
		{name: "rate", args: []string{"--rate", "0"}, wantErr: "--rate 0"},
		{name: "threshold", args: []string{"--decode-threshold", "1.5"}, wantErr: "--decode-threshold 1.5"},
		{name: "retries", args: []string{"--rr-retries", "-1"}, wantErr: "--rr-retries -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(append([]string{"--bin", bin}, tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseOptions(%q): %v, want an error with %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil || o.frontend != filepath.Join(bin, "frontend") {
				t.Fatalf("parseOptions(%q) = %+v, %v", tc.args, o, err)
			}
		})
	}
}
