package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxDistValue is the largest token count a Dist may name or produce.
const MaxDistValue = 1_000_000

// distKind names the shape of a Dist; the zero value is no shape at all.
type distKind uint8

const (
	distFixed distKind = iota + 1
	distUniform
	distNormal
)

// Dist is a distribution of token counts: a fixed number, uniform over whole
// numbers from a minimum to a maximum, or normal with a mean and a standard
// deviation, rounded and clamped to 1..MaxDistValue. The zero Dist is
// invalid; make one with ParseDist or FixedDist.
type Dist struct {
	kind distKind
	a, b float64 // fixed: a; uniform: a..b; normal: mean a, stddev b
}

// FixedDist returns the distribution that is always n. It is valid only
// for n from 1 to MaxDistValue.
func FixedDist(n int) Dist { return Dist{kind: distFixed, a: float64(n)} }

// ParseDist reads a distribution spec: "N" or "fixed:N", "uniform:MIN:MAX"
// or "normal:MEAN:STDDEV". N, MIN and MAX are whole numbers from 1 to
// MaxDistValue with MIN ≤ MAX; MEAN is a number from 1 to MaxDistValue and
// STDDEV one from 0 to MaxDistValue. Spaces around the spec and its parts
// are ignored, and the kind is case-insensitive. On failure it returns the
// zero Dist and an error saying what is wrong.
func ParseDist(spec string) (Dist, error) {
	spec = strings.TrimSpace(spec)
	kind, rest, found := strings.Cut(spec, ":")
	if !found {
		n, err := parseCount(spec)
		if err != nil {
			return Dist{}, err
		}
		return Dist{kind: distFixed, a: n}, nil
	}
	args := strings.Split(rest, ":")
	switch k := strings.ToLower(strings.TrimSpace(kind)); k {
	case "fixed":
		if len(args) != 1 {
			return Dist{}, errors.New("fixed takes one value, fixed:N")
		}
		n, err := parseCount(args[0])
		if err != nil {
			return Dist{}, err
		}
		return Dist{kind: distFixed, a: n}, nil
	case "uniform":
		return parseUniform(args)
	case "normal":
		return parseNormal(args)
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q (fixed, uniform, normal)", k)
	}
}

func parseUniform(args []string) (Dist, error) {
	if len(args) != 2 {
		return Dist{}, errors.New("uniform takes two values, uniform:MIN:MAX")
	}
	lo, err := parseCount(args[0])
	if err != nil {
		return Dist{}, err
	}
	hi, err := parseCount(args[1])
	if err != nil {
		return Dist{}, err
	}
	if lo > hi {
		return Dist{}, fmt.Errorf("uniform minimum %g is above the maximum %g", lo, hi)
	}
	return Dist{kind: distUniform, a: lo, b: hi}, nil
}

func parseNormal(args []string) (Dist, error) {
	if len(args) != 2 {
		return Dist{}, errors.New("normal takes two values, normal:MEAN:STDDEV")
	}
	mean, err := parseNumber(args[0], 1)
	if err != nil {
		return Dist{}, fmt.Errorf("mean: %w", err)
	}
	sd, err := parseNumber(args[1], 0)
	if err != nil {
		return Dist{}, fmt.Errorf("standard deviation: %w", err)
	}
	return Dist{kind: distNormal, a: mean, b: sd}, nil
}

// parseCount reads a whole number from 1 to MaxDistValue.
func parseCount(s string) (float64, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > MaxDistValue {
		return 0, fmt.Errorf("%q is not a whole number from 1 to %d", s, MaxDistValue)
	}
	return float64(n), nil
}

// parseNumber reads a finite number from min to MaxDistValue.
func parseNumber(s string, min float64) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || x < min || x > MaxDistValue {
		return 0, fmt.Errorf("%q is not a number from %g to %d", s, min, MaxDistValue)
	}
	return x, nil
}

// Valid reports whether d is a distribution ParseDist could return.
func (d Dist) Valid() bool {
	whole := func(x float64) bool { return x == math.Trunc(x) && x >= 1 && x <= MaxDistValue }
	switch d.kind {
	case distFixed:
		return whole(d.a)
	case distUniform:
		return whole(d.a) && whole(d.b) && d.a <= d.b
	case distNormal:
		return d.a >= 1 && d.a <= MaxDistValue && d.b >= 0 && d.b <= MaxDistValue
	}
	return false
}

// Sample draws one count from d using r. The result is always from 1 to
// MaxDistValue; the invalid zero Dist gives 1.
func (d Dist) Sample(r *rand.Rand) int {
	var x float64
	switch d.kind {
	case distFixed:
		x = d.a
	case distUniform:
		x = d.a + float64(r.IntN(int(d.b-d.a)+1))
	case distNormal:
		x = math.Round(d.a + d.b*r.NormFloat64())
	}
	return int(min(max(x, 1), MaxDistValue))
}

// String returns the spec of d in the form ParseDist reads; ParseDist of it
// gives d back.
func (d Dist) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch d.kind {
	case distFixed:
		return f(d.a)
	case distUniform:
		return "uniform:" + f(d.a) + ":" + f(d.b)
	case distNormal:
		return "normal:" + f(d.a) + ":" + f(d.b)
	}
	return "invalid"
}
