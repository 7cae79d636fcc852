package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/sim"
)

// startSimGRPC serves enginesim's gRPC service on 127.0.0.1 in front of an
// engine with opts, running its loops when run is set, until the test
// ends; it returns the URL for --url.
func startSimGRPC(t *testing.T, opts sim.Options, run bool) string {
	t.Helper()
	e, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := e.Run(ctx); err != nil {
				t.Errorf("engine Run: %v", err)
			}
		})
		t.Cleanup(func() { cancel(); wg.Wait() })
	}
	svc, err := sim.NewGRPCService(sim.GRPCOptions{Engine: e})
	if err != nil {
		t.Fatalf("NewGRPCService: %v", err)
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	svc.Register(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestBinaryGRPC runs the real binary with --grpc against enginesim's gRPC
// service: every call succeeds, with its TTFT, E2E and token counts.
func TestBinaryGRPC(t *testing.T) {
	url := startSimGRPC(t, sim.Options{SpeedupRatio: 100}, true)
	stdout, stderr, code := runBinary(t, []string{"LOADGEN_GRPC=true"}, "--url", url, "--requests", "10",
		"--concurrency", "3", "--max-tokens", "5", "--json", "-")
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr)
	}
	var r loadgen.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	if r.Sent != 10 || r.OK != 10 || !maps.Equal(r.ByStatus, map[string]int64{"OK": 10}) {
		t.Errorf("sent %d, ok %d, by_status %v; want 10 × OK", r.Sent, r.OK, r.ByStatus)
	}
	if r.TTFT.Count != 10 || r.E2E.Count != 10 || r.OutputTokens != 50 || r.PromptTokens < 10 {
		t.Errorf("ttft %d, e2e %d samples, output %d, prompt %d tokens; want 10, 10, 50, some",
			r.TTFT.Count, r.E2E.Count, r.OutputTokens, r.PromptTokens)
	}
	target := "grpc://" + strings.TrimPrefix(url, "http://") + "/vllm.grpc.engine.VllmEngine/Generate"
	if r.Config.Target != target || r.Config.Model != "" || r.MaxConcurrencyObserved > 3 {
		t.Errorf("config %+v, max in flight %d; want target %s, no model, at most 3", r.Config, r.MaxConcurrencyObserved, target)
	}
}

// TestRunGRPCRefusal runs the program in process with --grpc against an
// engine whose queue holds one request and which never runs it: the other
// calls are refused and counted by their code, in the table too; the
// queued one is cancelled at the drain timeout.
func TestRunGRPCRefusal(t *testing.T) {
	url := startSimGRPC(t, sim.Options{MaxNumQueuedReqs: 1}, false)
	var stdout, stderr bytes.Buffer
	args := []string{"--grpc", "--url", url, "--requests", "6", "--concurrency", "2", "--drain-timeout", "100ms",
		"--progress-interval", "0"}
	if code := run(t.Context(), args, nil, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr.String())
	}
	table := stdout.String()
	for name, n := range map[string]int64{"sent": 6, "ok": 0, "status RESOURCE_EXHAUSTED": 5, "status cancelled": 1} {
		re := regexp.MustCompile(`(?m)^` + name + `\s{2,}` + strconv.FormatInt(n, 10) + `\s*$`)
		if !re.MatchString(table) {
			t.Errorf("table has no row %q with %d:\n%s", name, n, table)
		}
	}
	if !regexp.MustCompile(`(?m)^model\s+none \(stream\)$`).MatchString(table) ||
		!regexp.MustCompile(`(?m)^target\s+grpc://127\.0\.0\.1:\d+/vllm\.grpc\.engine\.VllmEngine/Generate$`).MatchString(table) {
		t.Errorf("table's target and model rows:\n%s", table)
	}
}

// TestRunGRPCNoServer: with nothing at --url, no call is answered: each is
// an "error", and the program still reports and exits 0.
func TestRunGRPCNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stdout, stderr bytes.Buffer
	args := []string{"--grpc", "--url", "http://" + addr, "--requests", "3", "--json", "-", "--progress-interval", "0"}
	if code := run(t.Context(), args, nil, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, stderr.String())
	}
	var r loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(r.ByStatus, map[string]int64{"error": 3}) {
		t.Errorf("by_status = %v, want 3 × error", r.ByStatus)
	}
}
