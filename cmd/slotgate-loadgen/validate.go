package main

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// minProgressInterval keeps a typo from flooding stderr.
const minProgressInterval = 10 * time.Millisecond

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
	case "default":
		return "--" + flagName + " (default)"
	default:
		return src
	}
}

func (v *validator) fail(flagName, value, rule string) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s, got %q", v.name(flagName), rule, value))
}

// onlyWith reports a setting given explicitly for the other mode.
func (v *validator) onlyWith(flagName, value, mode string) {
	if src := v.sources[flagName]; src != "default" {
		v.fail(flagName, value, "is only used with --mode "+mode+" (the mode is "+other(mode)+")")
	}
}

func (v *validator) integer(flagName, s string, min, max int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < min || n > max {
		v.fail(flagName, s, fmt.Sprintf("must be a whole number from %d to %d", min, max))
		return 0
	}
	return n
}

// other is the mode that is not m.
func other(m string) string {
	if m == string(loadgen.Open) {
		return string(loadgen.Closed)
	}
	return string(loadgen.Open)
}

// positive parses a positive whole number, with "" for unset (0).
func (v *validator) positive(flagName, s string) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 {
		v.fail(flagName, s, "must be a positive whole number")
		return 0
	}
	return n
}

func (v *validator) seed(flagName, s string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		v.fail(flagName, s, "must be a whole number from 0 to 18446744073709551615")
		return 0
	}
	return n
}

func (v *validator) rate(flagName, s string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || x <= 0 || x > loadgen.MaxRate {
		v.fail(flagName, s, fmt.Sprintf("must be requests per second, above 0 and at most %g, with --mode open", loadgen.MaxRate))
		return 0
	}
	return x
}

// duration parses s; "" is unset (0) when min is positive, since such a
// setting has no default.
func (v *validator) duration(flagName, s string, min time.Duration) time.Duration {
	if s == "" && min > 0 {
		return 0
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		v.fail(flagName, s, "must be a duration such as 500ms, 30s or 5m")
	case d < min && min > 0:
		v.fail(flagName, s, "must be positive")
	case d < min:
		v.fail(flagName, s, "must not be negative")
	default:
		return d
	}
	return 0
}

func (v *validator) url(flagName, s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(flagName, s, "must be an http:// or https:// URL with a host")
		return ""
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		v.fail(flagName, s, "must not have a query or fragment")
		return ""
	}
	return u.String()
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

func (v *validator) nonEmpty(flagName, s string) string {
	if strings.TrimSpace(s) == "" {
		v.fail(flagName, s, "must not be empty")
	}
	return s
}

func (v *validator) boolean(flagName, s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		v.fail(flagName, s, "must be true or false")
	}
	return b
}

func (v *validator) dist(flagName, s string) loadgen.Dist {
	d, err := loadgen.ParseDist(s)
	if err != nil {
		v.fail(flagName, s, "must be N, uniform:MIN:MAX or normal:MEAN:STDDEV ("+err.Error()+")")
	}
	return d
}
