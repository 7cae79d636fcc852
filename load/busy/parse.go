package busy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The Parse functions read the text of a flag or environment value. They
// accept what Dynamo's flags accept, and surrounding spaces, which
// environment files tend to carry. The words None and none (Dynamo's
// spelling) and the empty string mean "check off": they return nil and no
// error. The errors do not name the flag; the caller, which knows it, adds
// it.

// ParseFraction parses a decode threshold: a finite number within [0, 1].
func ParseFraction(s string) (*float64, error) {
	s, unset := trimUnset(s)
	if unset {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !validFraction(v) {
		return nil, fmt.Errorf("invalid fraction %q: want a number between 0 and 1, or None", s)
	}
	return positiveZero(v), nil
}

// ParseTokens parses an absolute token threshold: a decimal integer within
// the range of uint64.
func ParseTokens(s string) (*uint64, error) {
	s, unset := trimUnset(s)
	if unset {
		return nil, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("invalid token count %q: want an integer between 0 and %d, or None", s, uint64(math.MaxUint64))
	}
	return &v, nil
}

// ParseFrac parses a prefill fraction threshold: a finite number >= 0.
func ParseFrac(s string) (*float64, error) {
	s, unset := trimUnset(s)
	if unset {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !validFrac(v) {
		return nil, fmt.Errorf("invalid fraction %q: want a finite number >= 0, or None", s)
	}
	return positiveZero(v), nil
}

// trimUnset trims s and reports whether it means "unset".
func trimUnset(s string) (string, bool) {
	s = strings.TrimSpace(s)
	return s, s == "" || s == "None" || s == "none"
}

// positiveZero turns -0 into 0, so that logs and JSON never show "-0".
func positiveZero(v float64) *float64 {
	if v == 0 {
		v = 0
	}
	return &v
}
