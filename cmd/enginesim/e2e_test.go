package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// TestBinary runs the real enginesim on a port the kernel picks, finds it
// in the listening line, streams one completion, and stops it with SIGTERM.
func TestBinary(t *testing.T) {
	log := &logBuffer{}
	cmd := exec.Command(binary, "--listen", "127.0.0.1:0", "--speedup-ratio", "100", "--log-level", "debug")
	cmd.Env = []string{"ENGINESIM_SEED=7"}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	addr := listeningAddr(t, log, exited)

	start := time.Now()
	r := stream(t, client(t), addr, `{"prompt":"hello","max_tokens":16,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	payloads, done := events(r.Body, 0)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("a 16-token request took %v at speedup 100", elapsed)
	}
	if !done || len(payloads) != 17 {
		t.Fatalf("%d events, [DONE] %v; want 16 tokens, the usage chunk and [DONE]", len(payloads), done)
	}
	var last struct {
		Choices []any
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(payloads[16]), &last); err != nil || len(last.Choices) != 0 || last.Usage.CompletionTokens != 16 {
		t.Fatalf("usage chunk %s (%v)", payloads[16], err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(waitLimit):
		t.Fatal("enginesim did not exit after SIGTERM")
	}
	if waitErr != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", waitErr, log)
	}
}

// A bad flag stops start-up with status 2 and a line naming it.
func TestBinaryBadFlag(t *testing.T) {
	cmd := exec.Command(binary, "--speedup-ratio", "0", "--listen", "127.0.0.1:0")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2\n%s", err, out)
	}
	if want := `enginesim: --speedup-ratio: must be a positive number such as 1, 0.5 or 100, got "0"`; strings.TrimSpace(string(out)) != want {
		t.Fatalf("stderr %q, want %q", out, want)
	}
}

// TestBinaryGRPC runs the real enginesim with its gRPC port set by
// ENGINESIM_GRPC_LISTEN, finds it in the listening line, streams one
// Generate call, and stops it with SIGTERM.
func TestBinaryGRPC(t *testing.T) {
	log := &logBuffer{}
	cmd := exec.Command(binary, "--listen", "127.0.0.1:0", "--speedup-ratio", "100")
	cmd.Env = []string{"ENGINESIM_GRPC_LISTEN=127.0.0.1:0"}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	l := listening(t, log, exited)
	if l.GRPCAddr == "" {
		t.Fatalf("no grpc_addr in the listening line:\n%s", log)
	}
	client := enginepb.NewVllmEngineClient(dialGRPC(t, l.GRPCAddr))
	if n, done := readGenerate(t, mustGenerate(t, client, generateReq(16))); n != 16 || done.GetPromptTokens() != 2 {
		t.Fatalf("%d tokens streamed, complete %v; want 16 tokens of a 2-token prompt", n, done)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(waitLimit):
		t.Fatal("enginesim did not exit after SIGTERM")
	}
	if waitErr != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", waitErr, log)
	}
}
