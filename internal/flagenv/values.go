package flagenv

import (
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The numeric checks take the rule to report because the commands word it
// differently ("an integer from 1 through 8", "a whole number from 1 to 8"),
// and their messages must not change. Surrounding spaces are ignored.

// Int parses s as a base-10 integer from lo through hi. On failure it
// records rule and returns 0.
func (c *Checker) Int(flagName, s string, lo, hi int, rule string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo || n > hi {
		c.Fail(flagName, s, rule)
		return 0
	}
	return n
}

// Int64 is Int for int64 values.
func (c *Checker) Int64(flagName, s string, lo, hi int64, rule string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < lo || n > hi {
		c.Fail(flagName, s, rule)
		return 0
	}
	return n
}

// Uint64 parses s as any base-10 uint64. On failure it records rule and
// returns 0.
func (c *Checker) Uint64(flagName, s, rule string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		c.Fail(flagName, s, rule)
		return 0
	}
	return n
}

// PositiveFloat parses s as a number above 0 and at most hi; NaN and
// infinities never pass. On failure it records rule and returns 0.
func (c *Checker) PositiveFloat(flagName, s string, hi float64, rule string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || x > hi {
		c.Fail(flagName, s, rule)
		return 0
	}
	return x
}

// Duration parses s as a time.Duration of at least min, which is 0 ("must
// not be negative") or positive ("must be positive"). On failure it records
// the problem and returns 0.
func (c *Checker) Duration(flagName, s string, min time.Duration) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		c.Fail(flagName, s, "must be a duration such as "+c.durationExamples())
	case d < min && min > 0:
		c.Fail(flagName, s, "must be positive")
	case d < min:
		c.Fail(flagName, s, "must not be negative")
	default:
		return d
	}
	return 0
}

func (c *Checker) durationExamples() string {
	if c.DurationExamples == "" {
		return "500ms, 5s or 2m"
	}
	return c.DurationExamples
}

// Address checks that s is host:port or :port with a port from 0 through
// 65535, and returns it in net.JoinHostPort's form; "" on failure.
func (c *Checker) Address(flagName, s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		c.Fail(flagName, s, "must be host:port or :port")
		return ""
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		c.Fail(flagName, s, "must have a port from 0 through 65535")
		return ""
	}
	return net.JoinHostPort(host, port)
}

// URL checks that s is an http:// or https:// URL with a host and without a
// query or fragment; nil on failure. A bare "?" (ForceQuery) passes: callers
// that refuse it check u.ForceQuery themselves.
func (c *Checker) URL(flagName, s string) *url.URL {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.Fail(flagName, s, "must be an http:// or https:// URL with a host")
		return nil
	}
	if u.RawQuery != "" || u.Fragment != "" {
		c.Fail(flagName, s, "must not have a query or fragment")
		return nil
	}
	return u
}

// OneOf checks that s is exactly one of allowed; "" on failure.
func (c *Checker) OneOf(flagName, s string, allowed ...string) string {
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	c.Fail(flagName, s, "must be one of "+strings.Join(allowed, ", "))
	return ""
}

// NonEmpty checks that s has more than spaces. It returns s either way, as
// the value is still the user's.
func (c *Checker) NonEmpty(flagName, s string) string {
	if strings.TrimSpace(s) == "" {
		c.Fail(flagName, s, "must not be empty")
	}
	return s
}

// Bool parses s as a switch: 1, true, on, yes (or t) for true and 0,
// false, off, no (or f) for false, in any case, as Dynamo reads its
// switches; strconv.ParseBool's words all still pass. On failure it records
// the problem and returns false.
func (c *Checker) Bool(flagName, s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "yes":
		return true
	case "0", "f", "false", "off", "no":
		return false
	}
	c.Fail(flagName, s, "must be true or false (or 1 or 0, on or off, yes or no)")
	return false
}
