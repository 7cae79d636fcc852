package sim

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// grpc.health.v1 and VllmEngine.HealthCheck report SERVING and healthy
// while the engine runs; a Watch stream gets NOT_SERVING and ends when the
// service shuts down or the engine stops.
func TestGRPCHealth(t *testing.T) {
	serving, notServing := healthgrpc.HealthCheckResponse_SERVING, healthgrpc.HealthCheckResponse_NOT_SERVING
	for _, stop := range []string{"Shutdown", "engine stop"} {
		t.Run(stop, func(t *testing.T) {
			e := newEngine(t, Options{})
			ctx, cancel := context.WithCancel(t.Context())
			ran := make(chan error, 1)
			go func() { ran <- e.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-ran })
			s := serveGRPC(t, e)
			for _, service := range []string{"", "vllm.grpc.engine.VllmEngine"} {
				if r, err := s.health.Check(t.Context(), &healthgrpc.HealthCheckRequest{Service: service}); err != nil || r.GetStatus() != serving {
					t.Fatalf("Check(%q): %v, %v", service, r, err)
				}
			}
			_, err := s.health.Check(t.Context(), &healthgrpc.HealthCheckRequest{Service: "other"})
			checkCode(t, err, codes.NotFound)
			if r, err := s.client.HealthCheck(t.Context(), &enginepb.HealthCheckRequest{}); err != nil || !r.GetHealthy() {
				t.Fatalf("HealthCheck: %v, %v", r, err)
			}
			w, err := s.health.Watch(t.Context(), &healthgrpc.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			unknown, err := s.health.Watch(t.Context(), &healthgrpc.HealthCheckRequest{Service: "other"})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := w.Recv(); err != nil || r.GetStatus() != serving {
				t.Fatalf("Watch: %v, %v", r, err)
			}
			if r, err := unknown.Recv(); err != nil || r.GetStatus() != healthgrpc.HealthCheckResponse_SERVICE_UNKNOWN {
				t.Fatalf("Watch(other): %v, %v", r, err)
			}
			if stop == "Shutdown" {
				s.svc.Shutdown()
				s.svc.Shutdown()
			} else {
				cancel()
				<-ran
				ran <- nil
			}
			if r, err := w.Recv(); err != nil || r.GetStatus() != notServing {
				t.Fatalf("Watch after %s: %v, %v", stop, r, err)
			}
			for _, c := range []healthgrpc.Health_WatchClient{w, unknown} {
				if r, err := c.Recv(); err == nil {
					t.Fatalf("Watch after %s goes on: %v", stop, r)
				}
			}
			if r, err := s.health.Check(t.Context(), &healthgrpc.HealthCheckRequest{}); err != nil || r.GetStatus() != notServing {
				t.Fatalf("Check after %s: %v, %v", stop, r, err)
			}
			r, err := s.client.HealthCheck(t.Context(), &enginepb.HealthCheckRequest{})
			if err != nil || r.GetHealthy() != (stop == "Shutdown") {
				t.Fatalf("HealthCheck after %s: %v, %v", stop, r, err)
			}
		})
	}
}
