package main

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
)

// Bounds of the integer settings.
const (
	maxInt       = math.MaxInt32
	maxBlockSize = 1 << 16
	maxRanks     = 1024
)

// validator converts text to typed values and collects every problem.
type validator struct {
	sources map[string]string
	errs    []error
}

// name is how a problem refers to a setting: by the flag if the value came
// from the command line, by the variable if it came from the environment.
func (v *validator) name(flagName string) string {
	switch src := v.sources[flagName]; src {
	case "flag":
		return "--" + flagName
	case "default", "":
		return "--" + flagName + " (default)"
	default:
		return src
	}
}

func (v *validator) fail(flagName, value, rule string) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s, got %q", v.name(flagName), rule, value))
}

func (v *validator) intRange(flagName, s string, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo || n > hi {
		v.fail(flagName, s, fmt.Sprintf("must be an integer from %d through %d", lo, hi))
		return 0
	}
	return n
}

func (v *validator) uint64(flagName, s string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		v.fail(flagName, s, "must be an integer from 0 through 18446744073709551615")
		return 0
	}
	return n
}

func (v *validator) positiveFloat(flagName, s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		v.fail(flagName, s, "must be a positive number such as 1, 0.5 or 100")
		return 0
	}
	return f
}

func (v *validator) address(flagName, s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		v.fail(flagName, s, "must be host:port or :port")
		return ""
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.fail(flagName, s, "must have a port from 0 through 65535")
		return ""
	}
	return net.JoinHostPort(host, port)
}

func (v *validator) nonEmpty(flagName, s string) string {
	if strings.TrimSpace(s) == "" {
		v.fail(flagName, s, "must not be empty")
	}
	return s
}

func (v *validator) oneOf(flagName, s string, allowed ...string) string {
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	v.fail(flagName, s, "must be one of "+strings.Join(allowed, ", "))
	return ""
}
