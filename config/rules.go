package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// The checks below are slotgate's own: the shared ones are in
// internal/flagenv, and these keep slotgate's wording.

// engineLimit reads N; "" is unset (0), which means no cap.
func engineLimit(v *flagenv.Checker, flagName, s string) int {
	if s == "" {
		return 0
	}
	// The limiter keeps math.MaxInt for "no limit".
	return v.Int(flagName, s, 1, math.MaxInt-1, "must be a positive integer")
}

func intAtLeast(v *flagenv.Checker, flagName, s string, min int) int {
	return v.Int(flagName, s, min, math.MaxInt, fmt.Sprintf("must be an integer of at least %d", min))
}

// overloadStatus follows Dynamo's parse_overload_status_code: trim, parse,
// accept 200 through 999, and fall back to 529 otherwise, with a warning.
func overloadStatus(v *flagenv.Checker, flagName, s string) int {
	code, ok := ParseOverloadStatus(s)
	if !ok {
		v.Warn(fmt.Sprintf("%s: %q is not a status from 200 through 999; using %d",
			v.Name(flagName), s, DefaultOverloadStatus))
	}
	return code
}

// ParseOverloadStatus applies the DYN_HTTP_OVERLOAD_STATUS_CODE rules to s.
// It returns the status to use and whether s was usable as given.
func ParseOverloadStatus(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 200 || n > 999 {
		return DefaultOverloadStatus, false
	}
	return n, true
}

func path(v *flagenv.Checker, flagName, s string) string {
	if !isPath(s) {
		v.Fail(flagName, s, "must be a path starting with /")
		return ""
	}
	return s
}

// paths reads a comma-separated list of paths, skipping empty entries.
func paths(v *flagenv.Checker, flagName, s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !isPath(p) {
			v.Fail(flagName, s, fmt.Sprintf("each entry must be a path starting with /, %q is not", p))
			return nil
		}
		out = append(out, p)
	}
	return out
}

// isPath accepts an absolute URL path with nothing that would end it.
func isPath(s string) bool {
	return strings.HasPrefix(s, "/") && !strings.ContainsAny(s, " ?#")
}
