package e2e_test

import (
	"context"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// TestGRPCLoadReporter: the real binary serves LoadReporter and gRPC
// health on its gRPC admin port; GetLoad answers the snapshot, WatchLoad
// streams it with heartbeats, and SIGTERM ends the stream rather than
// leaving it silent.
func TestGRPCLoadReporter(t *testing.T) {
	e := newEngine(t)
	s := start(t, e.url(), nil, "--engine-request-limit", "3", "--block-size", "16", "--drain-delay", "0s")
	if s.grpc == "" || s.grpc == "off" {
		t.Fatalf("no gRPC address in the listening line")
	}
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "slotgate.load.v1.LoadReporter"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", h, err)
	}
	client := loadv1.NewLoadReporterClient(conn)
	load, err := client.GetLoad(ctx, &loadv1.GetLoadRequest{})
	if err != nil {
		t.Fatalf("GetLoad: %v", err)
	}
	if load.GetRequests().GetLimit() != 3 || len(load.GetRanks()) != 1 || load.GetRanks()[0].GetBlockSize().GetValue() != 16 ||
		load.GetRanks()[0].GetBlockSize().GetSource() != loadv1.Source_SOURCE_STATIC {
		t.Errorf("GetLoad = %v, want limit 3 and rank 0 with the static block size", load)
	}
	stream, err := client.WatchLoad(ctx, &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatalf("WatchLoad: %v", err)
	}
	var last uint64
	for i := range 3 { // the current snapshot, then at least two more: heartbeats if nothing else
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("WatchLoad message %d: %v", i, err)
		}
		if msg.GetSeq() <= last {
			t.Errorf("Seq %d after %d", msg.GetSeq(), last)
		}
		last = msg.GetSeq()
	}
	healthWatch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := healthWatch.Recv(); err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health watch: %v, %v", h, err)
	}
	s.signal(syscall.SIGTERM)
	// Draining: gRPC health says so at once, as /readyz does.
	if h, err := healthWatch.Recv(); err != nil || h.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after SIGTERM: %v, %v; want NOT_SERVING", h, err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break // ended, not silent
		}
	}
	if code := s.wait(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
}
