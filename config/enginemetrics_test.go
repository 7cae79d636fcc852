package config_test

import (
	"testing"

	"github.com/slotgate/slotgate/config"
)

// TestServeEngineMetrics: auto (the default) follows the dialect; an
// explicit value wins, except on with no scrape to answer from.
func TestServeEngineMetrics(t *testing.T) {
	on := func(want bool) func(*testing.T, config.Config) {
		return func(t *testing.T, c config.Config) { eq(t, "ServeEngineMetrics", c.ServeEngineMetrics, want) }
	}
	runValidation(t, []validationCase{
		{name: "default: on with the dialect auto, not yet detected", check: on(true)},
		{name: "default: on with a dialect", args: []string{"--engine-metrics-dialect=sglang"}, check: on(true)},
		{name: "default: off with the dialect none", args: []string{"--engine-metrics-dialect=none"}, check: on(false)},
		{name: "auto spelled out", env: map[string]string{"SLOTGATE_SERVE_ENGINE_METRICS": "AUTO"}, check: on(true)},
		{name: "bare flag", args: []string{"--serve-engine-metrics"}, check: on(true)},
		{name: "off: /metrics passes through", args: []string{"--serve-engine-metrics=false"}, check: on(false)},
		{name: "off by variable", env: map[string]string{"SLOTGATE_SERVE_ENGINE_METRICS": "0"}, check: on(false)},
		{name: "flag wins over variable", args: []string{"--serve-engine-metrics=true"},
			env: map[string]string{"SLOTGATE_SERVE_ENGINE_METRICS": "false"}, check: on(true)},
		{name: "on with the dialect none refused", args: []string{"--serve-engine-metrics=true", "--engine-metrics-dialect=none"},
			probs: []bad{{"--serve-engine-metrics", "true"}}},
		{name: "not a bool", env: map[string]string{"SLOTGATE_SERVE_ENGINE_METRICS": "maybe"},
			probs: []bad{{"SLOTGATE_SERVE_ENGINE_METRICS", "maybe"}}},
	})
}
