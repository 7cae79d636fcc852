package sim

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// healthServer is grpc.health.v1.Health for the server as a whole ("") and
// for vllm.grpc.engine.VllmEngine: SERVING while the engine runs and the
// service is not shut down, NOT_SERVING after.
type healthServer struct {
	healthgrpc.UnimplementedHealthServer
	g *GRPCService
}

// known reports whether the health service answers for service.
func (healthServer) known(service string) bool {
	return service == "" || service == enginepb.VllmEngine_ServiceDesc.ServiceName
}

func (h healthServer) status() healthgrpc.HealthCheckResponse_ServingStatus {
	if h.g.serving() {
		return healthgrpc.HealthCheckResponse_SERVING
	}
	return healthgrpc.HealthCheckResponse_NOT_SERVING
}

// Check answers the status of a known service, and NOT_FOUND for any
// other, as the protocol asks.
func (h healthServer) Check(_ context.Context, req *healthgrpc.HealthCheckRequest) (*healthgrpc.HealthCheckResponse, error) {
	if !h.known(req.GetService()) {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", req.GetService())
	}
	return &healthgrpc.HealthCheckResponse{Status: h.status()}, nil
}

// Watch sends the status at once (SERVICE_UNKNOWN for an unknown service),
// then, when the engine stops or the service shuts down, NOT_SERVING for a
// known service, and ends; or it ends with the client's context.
func (h healthServer) Watch(req *healthgrpc.HealthCheckRequest, stream grpc.ServerStreamingServer[healthgrpc.HealthCheckResponse]) error {
	known := h.known(req.GetService())
	st := healthgrpc.HealthCheckResponse_SERVICE_UNKNOWN
	if known {
		st = h.status()
	}
	if err := stream.Send(&healthgrpc.HealthCheckResponse{Status: st}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
		return status.FromContextError(stream.Context().Err()).Err()
	case <-h.g.engine.done:
	case <-h.g.shutdown:
	}
	if known && st == healthgrpc.HealthCheckResponse_SERVING {
		return stream.Send(&healthgrpc.HealthCheckResponse{Status: healthgrpc.HealthCheckResponse_NOT_SERVING})
	}
	return nil
}
