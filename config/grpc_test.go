package config_test

import (
	"testing"

	"github.com/slotgate/slotgate/config"
)

// TestGRPCSettings: the engine's gRPC URL, the gRPC port and the message
// bound, each rule and its error.
func TestGRPCSettings(t *testing.T) {
	runValidation(t, []validationCase{
		{name: "defaults", check: func(t *testing.T, c config.Config) {
			if c.EngineGRPCURL != nil || c.GRPCListen != "" {
				t.Errorf("gRPC engine %v, port %q; want neither by default", c.EngineGRPCURL, c.GRPCListen)
			}
			eq(t, "GRPCMaxMessageBytes", c.GRPCMaxMessageBytes, 64<<20)
		}},
		{name: "engine URL", env: map[string]string{"SLOTGATE_ENGINE_GRPC_URL": "http://127.0.0.1:50051"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "EngineGRPCURL", c.EngineGRPCURL.String(), "http://127.0.0.1:50051")
			}},
		{name: "engine URL with a slash", args: []string{"--engine-grpc-url=http://engine:50051/"},
			check: func(t *testing.T, c config.Config) { eq(t, "host", c.EngineGRPCURL.Host, "engine:50051") }},
		{name: "engine URL over TLS", args: []string{"--engine-grpc-url=https://engine:50051"},
			probs: []bad{{"--engine-grpc-url", "https://engine:50051"}}},
		{name: "engine URL without a port", args: []string{"--engine-grpc-url=http://engine"},
			probs: []bad{{"--engine-grpc-url", "http://engine"}}},
		{name: "engine URL with a path", args: []string{"--engine-grpc-url=http://engine:50051/v1"},
			probs: []bad{{"--engine-grpc-url", "http://engine:50051/v1"}}},
		{name: "engine URL without a scheme", env: map[string]string{"SLOTGATE_ENGINE_GRPC_URL": "engine:50051"},
			probs: []bad{{"SLOTGATE_ENGINE_GRPC_URL", "engine:50051"}}},
		{name: "port", args: []string{"--grpc-listen=127.0.0.1:9092"},
			check: func(t *testing.T, c config.Config) { eq(t, "GRPCListen", c.GRPCListen, "127.0.0.1:9092") }},
		{name: "port off", env: map[string]string{"SLOTGATE_GRPC_LISTEN": "off"},
			check: func(t *testing.T, c config.Config) { eq(t, "GRPCListen", c.GRPCListen, "") }},
		{name: "port equals the proxy's", args: []string{"--listen=:7000", "--grpc-listen=:7000"},
			probs: []bad{{"--grpc-listen", ":7000"}}},
		{name: "port equals the admin port", args: []string{"--grpc-listen=:9090"},
			probs: []bad{{"--grpc-listen", ":9090"}}},
		{name: "port bad", env: map[string]string{"SLOTGATE_GRPC_LISTEN": "9092"},
			probs: []bad{{"SLOTGATE_GRPC_LISTEN", "9092"}}},
		{name: "message bound", args: []string{"--grpc-max-message-bytes=1048576"},
			check: func(t *testing.T, c config.Config) { eq(t, "GRPCMaxMessageBytes", c.GRPCMaxMessageBytes, 1<<20) }},
		{name: "message bound too small", args: []string{"--grpc-max-message-bytes=10"},
			probs: []bad{{"--grpc-max-message-bytes", "10"}}},
		{name: "message bound beyond gRPC's", env: map[string]string{"SLOTGATE_GRPC_MAX_MESSAGE_BYTES": "4294967296"},
			probs: []bad{{"SLOTGATE_GRPC_MAX_MESSAGE_BYTES", "4294967296"}}},
	})
}
