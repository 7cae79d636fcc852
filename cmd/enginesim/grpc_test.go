package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// dialGRPC connects to addr; the connection is closed at cleanup.
func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// generateReq asks for tokens tokens of a short prompt, streamed.
func generateReq(tokens uint32) *enginepb.GenerateRequest {
	return &enginepb.GenerateRequest{
		RequestId:      "r",
		Input:          &enginepb.GenerateRequest_Text{Text: "hello"},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(tokens), IgnoreEos: true},
		Stream:         true,
	}
}

// readGenerate reads a Generate stream to its end: the chunks' tokens and
// the complete message.
func readGenerate(t *testing.T, c grpc.ServerStreamingClient[enginepb.GenerateResponse]) (int, *enginepb.GenerateComplete) {
	t.Helper()
	tokens := 0
	for {
		m, err := c.Recv()
		if err != nil {
			t.Fatalf("Generate stream ended with %v before its complete message", err)
		}
		if done := m.GetComplete(); done != nil {
			if _, err := c.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the complete message: %v, want the end", err)
			}
			return tokens, done
		}
		tokens += len(m.GetChunk().GetTokenIds())
	}
}

// With --grpc-listen, run serves vLLM's Generate and gRPC health on a
// port of its own, logged as grpc_addr; a signal lets a stream in flight
// finish, ends health Watch streams with NOT_SERVING so that they do not
// hold the shutdown, and run returns 0.
func TestRunServesGRPC(t *testing.T) {
	s := startRun(t, []string{"--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"}, nil)
	if s.grpc == "" || s.grpc == s.addr {
		t.Fatalf("listening line: addr %q, grpc_addr %q", s.addr, s.grpc)
	}
	conn := dialGRPC(t, s.grpc)
	health := healthgrpc.NewHealthClient(conn)
	if r, err := health.Check(t.Context(), &healthgrpc.HealthCheckRequest{}); err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", r, err)
	}
	watch, err := health.Watch(t.Context(), &healthgrpc.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: %v, %v", r, err)
	}
	client := enginepb.NewVllmEngineClient(conn)
	if n, done := readGenerate(t, mustGenerate(t, client, generateReq(5))); n != 5 || done.GetCompletionTokens() != 5 {
		t.Fatalf("%d tokens streamed, complete %v; want 5", n, done)
	}
	// Speedup 1: 30 tokens take about 0.2 s, so the signal comes mid-stream.
	c := mustGenerate(t, client, generateReq(30))
	if m, err := c.Recv(); err != nil || len(m.GetChunk().GetTokenIds()) != 1 {
		t.Fatalf("first message %v, %v", m, err)
	}
	start := time.Now()
	s.signals <- syscall.SIGTERM
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch after SIGTERM: %v, %v", r, err)
	}
	if n, done := readGenerate(t, c); n != 29 || done.GetFinishReason() != "length" {
		t.Fatalf("after SIGTERM the stream got %d more tokens, complete %v; want 29", n, done)
	}
	if code := <-s.code; code != exitOK {
		t.Fatalf("exit status %d, want 0\n%s", code, s.log)
	}
	if d := time.Since(start); d > shutdownTimeout/2 {
		t.Errorf("shutdown took %v", d)
	}
	for _, addr := range []string{s.addr, s.grpc} {
		if _, err := net.Dial("tcp", addr); err == nil {
			t.Errorf("%s still accepts connections after shutdown", addr)
		}
	}
	if !strings.Contains(s.log.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", s.log)
	}
}

// Without --grpc-listen there is no gRPC port and no grpc_addr.
func TestRunWithoutGRPC(t *testing.T) {
	s := startRun(t, []string{"--listen", "127.0.0.1:0"}, map[string]string{"ENGINESIM_GRPC_LISTEN": "off"})
	if s.grpc != "" {
		t.Fatalf("grpc_addr %q without --grpc-listen", s.grpc)
	}
}

func mustGenerate(t *testing.T, client enginepb.VllmEngineClient, req *enginepb.GenerateRequest) grpc.ServerStreamingClient[enginepb.GenerateResponse] {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	c, err := client.Generate(ctx, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return c
}
