package config

import "github.com/slotgate/slotgate/internal/flagenv"

// fillFirstToken reads the first-token watchdog's settings: durations, not
// negative; a growth per 1000 tokens needs a base budget, since without
// one the watchdog is off and the growth would do nothing.
func (c *Config) fillFirstToken(r *raw, v *flagenv.Checker) {
	c.FirstTokenTimeout = v.Duration("first-token-timeout", r.FirstTokenTimeout, 0)
	c.FirstTokenTimeoutPer1K = v.Duration("first-token-timeout-per-1k-tokens", r.FirstTokenTimeoutPer1K, 0)
	if c.FirstTokenTimeoutPer1K > 0 && c.FirstTokenTimeout == 0 {
		v.Fail("first-token-timeout-per-1k-tokens", r.FirstTokenTimeoutPer1K,
			"needs "+v.Name("first-token-timeout")+": without it the watchdog is off")
	}
}
