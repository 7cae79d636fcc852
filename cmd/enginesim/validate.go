package main

import (
	"fmt"
	"math"

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

func positiveFloat(v *flagenv.Checker, flagName, s string) float64 {
	return v.PositiveFloat(flagName, s, math.MaxFloat64, "must be a positive number such as 1, 0.5 or 100")
}
