package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// Bounds of the integer settings.
const (
	maxInt       = math.MaxInt32
	maxBlockSize = 1 << 16
	maxRanks     = 1024
)

// The checks below keep enginesim's wording; the parsing is
// internal/flagenv's.

func intRange(v *flagenv.Checker, flagName, s string, lo, hi int) int {
	return v.Int(flagName, s, lo, hi, fmt.Sprintf("must be an integer from %d through %d", lo, hi))
}

func seed(v *flagenv.Checker, flagName, s string) uint64 {
	return v.Uint64(flagName, s, "must be an integer from 0 through 18446744073709551615")
}

// rate parses a probability: a number from 0 through 1.
func rate(v *flagenv.Checker, flagName, s string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > 1 {
		v.Fail(flagName, s, "must be a number from 0 through 1")
		return 0
	}
	return x
}

func positiveFloat(v *flagenv.Checker, flagName, s string) float64 {
	return v.PositiveFloat(flagName, s, math.MaxFloat64, "must be a positive number such as 1, 0.5 or 100")
}
