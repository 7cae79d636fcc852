package config_test

import (
	"testing"

	"github.com/slotgate/slotgate/config"
)

// TestDataPlaneSettings: --data-plane by flag and variable; a bad value,
// and the fasthttp plane combined with a setting it lacks, stop start-up
// naming --data-plane and its value.
func TestDataPlaneSettings(t *testing.T) {
	plane := func(want string) func(*testing.T, config.Config) {
		return func(t *testing.T, c config.Config) { eq(t, "DataPlane", c.DataPlane, want) }
	}
	fast := []string{"--data-plane=fasthttp"}
	with := func(args ...string) []string { return append(append([]string(nil), fast...), args...) }
	runValidation(t, []validationCase{
		{name: "default net/http", check: plane(config.DataPlaneNetHTTP)},
		{name: "flag", args: fast, check: plane(config.DataPlaneFastHTTP)},
		{name: "variable", env: map[string]string{"SLOTGATE_DATA_PLANE": "fasthttp"}, check: plane(config.DataPlaneFastHTTP)},
		{name: "flag over variable", args: []string{"--data-plane=nethttp"},
			env: map[string]string{"SLOTGATE_DATA_PLANE": "fasthttp"}, check: plane(config.DataPlaneNetHTTP)},
		{name: "with a queue", args: with("--engine-request-limit=8", "--request-queue-limit=16"),
			check: plane(config.DataPlaneFastHTTP)},
		{name: "unknown", args: []string{"--data-plane=nbio"}, probs: []bad{{"--data-plane", "nbio"}}},
		{name: "case matters", env: map[string]string{"SLOTGATE_DATA_PLANE": "FastHTTP"},
			probs: []bad{{"SLOTGATE_DATA_PLANE", "FastHTTP"}}},
		{name: "no gRPC engine", args: with("--engine-grpc-url=http://127.0.0.1:50051"),
			probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no gRPC port", args: with("--grpc-listen=127.0.0.1:9092"), probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no limits per rank", args: with("--engine-request-limit=8", "--per-rank-limits"),
			probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no prefill token limit", args: with("--engine-request-limit=8", "--engine-prefill-token-limit=4096"),
			probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no queue token limit", args: with("--engine-request-limit=8", "--request-queue-token-limit=4096"),
			probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no first-token watchdog", args: with("--first-token-timeout=5s"), probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no ORCA header", args: with("--orca-header"), probs: []bad{{"--data-plane", "fasthttp"}}},
		{name: "no admission policy", env: map[string]string{"SLOTGATE_DATA_PLANE": "fasthttp", "SLOTGATE_ADMISSION_CONFIG": "/etc/policy.yaml"},
			probs: []bad{{"SLOTGATE_DATA_PLANE", "fasthttp"}}},
	})
}
