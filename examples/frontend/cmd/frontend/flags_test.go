package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
)

func TestParseFlags(t *testing.T) {
	const w0 = "proxy=http://127.0.0.1:8080,admin=http://127.0.0.1:9090"
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "defaults"},
		{name: "two workers", args: []string{"--worker", w0, "--worker", "name=b,proxy=http://h:1,admin=http://h:2", "--policy", "roundrobin"}},
		{name: "policy", args: []string{"--policy", "random"}, wantErr: `--policy "random"`},
		{name: "cooldown", args: []string{"--cooldown", "0s"}, wantErr: "--cooldown 0s"},
		{name: "retries", args: []string{"--retries", "-1"}, wantErr: "--retries -1"},
		{name: "log level", args: []string{"--log-level", "loud"}, wantErr: `--log-level "loud"`},
		{name: "bad worker", args: []string{"--worker", "proxy=x"}, wantErr: `worker "proxy=x"`},
		{name: "same worker twice", args: []string{"--worker", w0, "--worker", w0}, wantErr: `name "127.0.0.1:8080" given twice`},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags(%q): %v, want an error with %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			}
			if tc.name == "defaults" && (o.policy != router.PolicyLoad || o.cooldown != time.Second || o.retries != 2) {
				t.Errorf("defaults %+v, want load, 1s, 2 retries", o)
			}
		})
	}
}
