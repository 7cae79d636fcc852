package main

import (
	"fmt"
	"math"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/loadgen"
)

// minProgressInterval keeps a typo from flooding stderr.
const minProgressInterval = 10 * time.Millisecond

// The checks below keep slotgate-loadgen's wording ("whole number ... to");
// the parsing is internal/flagenv's.

// newChecker returns a Checker with slotgate-loadgen's duration examples.
func newChecker(sources map[string]string) *flagenv.Checker {
	v := flagenv.NewChecker(sources)
	v.DurationExamples = "500ms, 30s or 5m"
	return v
}

// onlyWith reports a setting given explicitly for the other mode.
func onlyWith(v *flagenv.Checker, flagName, value, mode string) {
	if v.Explicit(flagName) {
		v.Fail(flagName, value, "is only used with --mode "+mode+" (the mode is "+other(mode)+")")
	}
}

// other is the mode that is not m.
func other(m string) string {
	if m == string(loadgen.Open) {
		return string(loadgen.Closed)
	}
	return string(loadgen.Open)
}

func integer(v *flagenv.Checker, flagName, s string, min, max int) int {
	return v.Int(flagName, s, min, max, fmt.Sprintf("must be a whole number from %d to %d", min, max))
}

func positive(v *flagenv.Checker, flagName, s string) int64 {
	return v.Int64(flagName, s, 1, math.MaxInt64, "must be a positive whole number")
}

func seed(v *flagenv.Checker, flagName, s string) uint64 {
	return v.Uint64(flagName, s, "must be a whole number from 0 to 18446744073709551615")
}

func rate(v *flagenv.Checker, flagName, s string) float64 {
	return v.PositiveFloat(flagName, s, loadgen.MaxRate,
		fmt.Sprintf("must be requests per second, above 0 and at most %g, with --mode open", loadgen.MaxRate))
}

// url refuses a bare "?" too, which flagenv's URL lets pass for slotgate.
func url(v *flagenv.Checker, flagName, s string) string {
	u := v.URL(flagName, s)
	if u == nil {
		return ""
	}
	if u.ForceQuery {
		v.Fail(flagName, s, "must not have a query or fragment")
		return ""
	}
	return u.String()
}

func dist(v *flagenv.Checker, flagName, s string) loadgen.Dist {
	d, err := loadgen.ParseDist(s)
	if err != nil {
		v.Fail(flagName, s, "must be N, uniform:MIN:MAX or normal:MEAN:STDDEV ("+err.Error()+")")
	}
	return d
}
