package config_test

import (
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

// TestFirstTokenSettings: the first-token watchdog's budget and its growth
// per 1000 prompt tokens, by flag and variable; bad values stop start-up
// naming who gave them and the value.
func TestFirstTokenSettings(t *testing.T) {
	budget := func(timeout, per1K time.Duration) func(*testing.T, config.Config) {
		return func(t *testing.T, c config.Config) {
			eq(t, "FirstTokenTimeout", c.FirstTokenTimeout, timeout)
			eq(t, "FirstTokenTimeoutPer1K", c.FirstTokenTimeoutPer1K, per1K)
		}
	}
	runValidation(t, []validationCase{
		{name: "default off", check: budget(0, 0)},
		{name: "flags", args: []string{"--first-token-timeout=10s", "--first-token-timeout-per-1k-tokens=250ms"},
			check: budget(10*time.Second, 250*time.Millisecond)},
		{name: "variables", env: map[string]string{"SLOTGATE_FIRST_TOKEN_TIMEOUT": "2m",
			"SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS": "1s"}, check: budget(2*time.Minute, time.Second)},
		{name: "flag over variable", args: []string{"--first-token-timeout=3s"},
			env: map[string]string{"SLOTGATE_FIRST_TOKEN_TIMEOUT": "9s"}, check: budget(3*time.Second, 0)},
		{name: "explicit zero", args: []string{"--first-token-timeout=0"}, check: budget(0, 0)},
		{name: "negative", args: []string{"--first-token-timeout=-1s"}, probs: []bad{{"--first-token-timeout", "-1s"}}},
		{name: "not a duration", env: map[string]string{"SLOTGATE_FIRST_TOKEN_TIMEOUT": "10"},
			probs: []bad{{"SLOTGATE_FIRST_TOKEN_TIMEOUT", "10"}}},
		{name: "per 1k negative", args: []string{"--first-token-timeout=5s", "--first-token-timeout-per-1k-tokens=-2ms"},
			probs: []bad{{"--first-token-timeout-per-1k-tokens", "-2ms"}}},
		{name: "per 1k not a duration", env: map[string]string{"SLOTGATE_FIRST_TOKEN_TIMEOUT": "5s",
			"SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS": "fast"},
			probs: []bad{{"SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS", "fast"}}},
		{name: "per 1k without a budget", args: []string{"--first-token-timeout-per-1k-tokens=1s"},
			probs: []bad{{"--first-token-timeout-per-1k-tokens", "1s"}}},
		{name: "both bad, both named", args: []string{"--first-token-timeout=soon", "--first-token-timeout-per-1k-tokens=-1s"},
			probs: []bad{{"--first-token-timeout", "soon"}, {"--first-token-timeout-per-1k-tokens", "-1s"}}},
	})
}
