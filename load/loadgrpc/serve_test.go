package loadgrpc_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

func TestServeHealthAndReflection(t *testing.T) {
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never, tcp: true})
	ctx := testContext(t)

	health := healthgrpc.NewHealthClient(f.conn)
	for _, svc := range []string{"", loadv1.LoadReporter_ServiceDesc.ServiceName} {
		r, err := health.Check(ctx, &healthgrpc.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
			t.Errorf("health Check(%q) = %v, %v; want SERVING", svc, r, err)
		}
	}

	info, err := reflectiongrpc.NewServerReflectionClient(f.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := info.Send(&reflectiongrpc.ServerReflectionRequest{
		MessageRequest: &reflectiongrpc.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := info.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"slotgate.load.v1.LoadReporter", "grpc.health.v1.Health"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, want it to include %s", names, want)
		}
	}
	_ = info.CloseSend()
}

// TestServeStopEndsWatches: watches last as long as their clients, so
// Serve must end them when ctx ends; otherwise it would wait StopTimeout
// (ten minutes here) and the test would time out.
func TestServeStopEndsWatches(t *testing.T) {
	f := newFixture(t, fixtureOptions{
		load: oneRank(), heartbeat: 50 * time.Millisecond, serve: loadgrpc.ServeOptions{StopTimeout: 10 * time.Minute},
	})
	ctx := testContext(t)
	w, err := f.client.WatchLoad(ctx, &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, w)
	if err := f.stopServe(); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	for {
		if _, err := w.Recv(); err != nil {
			if s := status.Convert(err); s.Code() != codes.Unavailable {
				t.Errorf("watch ended with %v, want UNAVAILABLE", err)
			}
			break
		}
	}
	if n := f.src.active.Load(); n != 0 {
		t.Errorf("%d watches still in progress after Serve returned", n)
	}
}

// TestServeStopTimeout: a health watch is not ended by anything but its
// client or the server's hard stop, so only StopTimeout lets Serve return.
func TestServeStopTimeout(t *testing.T) {
	f := newFixture(t, fixtureOptions{
		load: oneRank(), heartbeat: never, serve: loadgrpc.ServeOptions{StopTimeout: 10 * time.Millisecond},
	})
	hw, err := healthgrpc.NewHealthClient(f.conn).Watch(testContext(t), &healthgrpc.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := hw.Recv(); err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_SERVING {
		t.Fatalf("health Watch = %v, %v; want SERVING", r, err)
	}
	if err := f.stopServe(); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	sawNotServing := false
	for {
		r, err := hw.Recv()
		if err != nil {
			break
		}
		sawNotServing = sawNotServing || r.GetStatus() == healthgrpc.HealthCheckResponse_NOT_SERVING
	}
	if !sawNotServing {
		t.Error("the health watch never saw NOT_SERVING before the server stopped")
	}
}

func TestServeErrors(t *testing.T) {
	hub, err := report.NewHub(report.HubOptions{Compute: oneRank})
	if err != nil {
		t.Fatal(err)
	}
	closed, _ := listen(t, false)
	_ = closed.Close()
	for _, tt := range []struct {
		name string
		lis  net.Listener
		src  loadgrpc.Source
		opts loadgrpc.ServeOptions
	}{
		{"no source", nil, nil, loadgrpc.ServeOptions{}},
		{"negative StopTimeout", nil, hub, loadgrpc.ServeOptions{StopTimeout: -time.Second}},
		{"listener fails", closed, hub, loadgrpc.ServeOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
			lis := tt.lis
			if lis == nil {
				lis, _ = listen(t, false)
			}
			done := make(chan error, 1)
			go func() { done <- loadgrpc.Serve(context.Background(), lis, tt.src, tt.opts) }()
			select {
			case err := <-done:
				if err == nil {
					t.Error("Serve = nil, want an error")
				}
			case <-time.After(timeout):
				t.Fatal("Serve did not return")
			}
			if c, err := lis.Accept(); err == nil {
				_ = c.Close()
				t.Error("the listener is still open after Serve returned")
			}
		})
	}
}

// TestServeDrainingTurnsHealthOff: when Draining closes, health answers
// NOT_SERVING while LoadReporter goes on answering.
func TestServeDrainingTurnsHealthOff(t *testing.T) {
	draining := make(chan struct{})
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never, tcp: true,
		serve: loadgrpc.ServeOptions{Draining: draining}})
	ctx := testContext(t)
	health := healthgrpc.NewHealthClient(f.conn)
	check := func(want healthgrpc.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := health.Check(ctx, &healthgrpc.HealthCheckRequest{})
		if err != nil || r.GetStatus() != want {
			t.Fatalf("health = %v, %v; want %v", r, err, want)
		}
	}
	check(healthgrpc.HealthCheckResponse_SERVING)
	close(draining)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := health.Check(ctx, &healthgrpc.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthgrpc.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health still %v, %v after draining began", r, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := loadv1.NewLoadReporterClient(f.conn).GetLoad(ctx, &loadv1.GetLoadRequest{}); err != nil {
		t.Errorf("GetLoad while draining: %v", err)
	}
}
