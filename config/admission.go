package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// The names of the admission settings whose rules depend on the variable
// that gave them.
const (
	// legacyQueueVar is Dynamo 1.5's name for Q, which keeps 1.5's rules.
	legacyQueueVar = "DYN_DYNAMO_REQUEST_QUEUE_LIMIT"
	// queueTimeoutMsVar is the proposed Dynamo name of the queue timeout,
	// a count of milliseconds rather than a Go duration.
	queueTimeoutMsVar = "DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS"
	// defaultQueueLimit is Q when the gate is on and Q is not given; it is
	// RequestQueueLimit's envDefault in settings.go.
	defaultQueueLimit = 16
)

// fillAdmission reads the backend admission gate: N, W, Q, and how the
// queue times out and is served.
func (c *Config) fillAdmission(r *raw, v *flagenv.Checker) {
	c.EngineRequestLimit = engineLimit(v, "engine-request-limit", r.EngineRequestLimit)
	c.EngineRequestWaitingLimit = engineLimit(v, "engine-request-waiting-limit", r.EngineRequestWaitingLimit)
	c.PerRankLimits = v.Bool("per-rank-limits", r.PerRankLimits)
	c.RequestQueueLimit = queueLimit(v, c.Sources["request-queue-limit"], r)
	c.EnginePrefillTokenLimit = tokenLimit(v, "engine-prefill-token-limit", r.EnginePrefillTokenLimit, c.GateOn())
	c.RequestQueueTokenLimit = tokenLimit(v, "request-queue-token-limit", r.RequestQueueTokenLimit, c.GateOn())

	timeout := queueTimeout(v, c.Sources["queue-timeout"], r.QueueTimeout)
	controlledDelay := v.Bool("queue-controlled-delay", r.QueueControlledDelay)
	if controlledDelay {
		c.QueueTimeout = timeout
	}
	c.QueueAdaptiveLIFO = v.Bool("queue-adaptive-lifo", r.QueueAdaptiveLIFO)
	switch {
	case !c.QueueAdaptiveLIFO || c.QueueTimeout > 0:
	case timeout > 0:
		v.Warn(fmt.Sprintf("%s is set but %s=false switches the queue timeout off: adaptive LIFO does nothing without one",
			v.Name("queue-adaptive-lifo"), v.Name("queue-controlled-delay")))
	default:
		v.Warn(v.Name("queue-adaptive-lifo") + " is set but no queue timeout is: it does nothing until one is set with --queue-timeout")
	}
}

// queueLimit reads Q after the rules of the variable that gave it (src).
// The engine limits count as set when given at all, even with a bad value,
// so that a bad N is one problem rather than two.
func queueLimit(v *flagenv.Checker, src string, r *raw) int {
	const name = "request-queue-limit"
	hasN, hasW := r.EngineRequestLimit != "", r.EngineRequestWaitingLimit != ""
	switch src {
	case flagenv.SourceDefault:
		if hasN || hasW {
			return defaultQueueLimit
		}
		return 0
	case legacyQueueVar:
		// Dynamo 1.5's rules: read only when N is set, at least 2.
		switch {
		case hasN:
			return intAtLeast(v, name, r.RequestQueueLimit, 2)
		case hasW:
			v.Warn(fmt.Sprintf("%s=%q is ignored: the legacy name is read only when the engine request limit (N) is set, "+
				"and only %s is; using %d. Set --request-queue-limit or DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT instead",
				legacyQueueVar, r.RequestQueueLimit, v.Name("engine-request-waiting-limit"), defaultQueueLimit))
			return defaultQueueLimit
		}
		return 0
	}
	// The flag or the canonical variable: Dynamo 1.7's rules.
	q := intAtLeast(v, name, r.RequestQueueLimit, 0)
	if hasN || hasW {
		return q
	}
	if q > 0 {
		v.Fail(name, r.RequestQueueLimit,
			"a queue needs an engine limit: set --engine-request-limit or --engine-request-waiting-limit")
	}
	return 0
}

// queueTimeout reads the queue timeout: a Go duration, or a count of
// milliseconds under DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS.
func queueTimeout(v *flagenv.Checker, src, s string) time.Duration {
	if src == queueTimeoutMsVar {
		ms := v.Int64("queue-timeout", s, 0, math.MaxInt64/int64(time.Millisecond),
			"must be a whole number of milliseconds, 0 for none")
		return time.Duration(ms) * time.Millisecond
	}
	return v.Duration("queue-timeout", s, 0)
}

// warnShadowed warns of each variable set beside a name of the same
// setting that comes before it, and so ignored: a legacy name beside the
// canonical one. Texts that mean the same are no conflict.
func warnShadowed(v *flagenv.Checker, shadows []flagenv.Shadow) {
	for _, s := range shadows {
		if s.Flag == "queue-timeout" && sameTimeout(s.UsedValue, s.IgnoredValue) {
			continue
		}
		v.Warn(fmt.Sprintf("%s=%q and %s=%q are both set: %s wins, and %s is ignored",
			s.Used, s.UsedValue, s.Ignored, s.IgnoredValue, s.Used, s.Ignored))
	}
}

// sameTimeout reports whether a duration and a count of milliseconds, as
// given to SLOTGATE_QUEUE_TIMEOUT and DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS,
// are the same timeout.
func sameTimeout(duration, ms string) bool {
	d, err := time.ParseDuration(strings.TrimSpace(duration))
	if err != nil {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(ms), 10, 64)
	return err == nil && n <= math.MaxInt64/int64(time.Millisecond) && time.Duration(n)*time.Millisecond == d
}

// tokenLimit reads a token limit: a whole number of tokens, 0 for none,
// below 2^62 (the limiter keeps the largest int64 for "no limit"); a
// positive one needs the gate on (N or W), as a queue does.
func tokenLimit(v *flagenv.Checker, flagName, s string, gateOn bool) int64 {
	n := v.Int64(flagName, s, 0, 1<<62, "must be a whole number of tokens, 0 for no limit")
	if n > 0 && !gateOn {
		v.Fail(flagName, s, "a token limit needs an engine limit: set --engine-request-limit or --engine-request-waiting-limit")
		return 0
	}
	return n
}
