package command

import (
	"runtime/debug"
	"strconv"

	"go.uber.org/zap"
)

// gcPercent is the pace slotgate sets Go's collector to when its
// environment has no GOGC: a heap goal three times the live heap instead
// of Go's two. A burst that opens a thousand streams made four
// collections in a third of a second at Go's pace, and their marks took
// the processors the streams' setup needed: at 200, two relay loops' TTFT
// p99 was 3.6 ms lower over 56 rounds at 1024 streams, at the same CPU
// per event (BENCHMARKS.md, "The floors once more"); the fast path served
// 3-14% more requests a second ("The fast path's garbage"). The cost is
// a heap up to a few MB larger.
const gcPercent = 200

// collectorPace sets the collector's pace to gcPercent unless env has
// GOGC, which Go has read already (GOGC=100 is Go's own pace, off turns
// the collector off), and logs the pace and where it came from. It
// returns the function that puts the pace back, for when Run returns (a
// test's process runs Run again).
func collectorPace(env map[string]string, log *zap.Logger) (restore func()) {
	if v, ok := env["GOGC"]; ok {
		log.Info("collector", zap.String("gogc", v), zap.String("gogc_from", "GOGC"))
		return func() {}
	}
	prev := debug.SetGCPercent(gcPercent)
	log.Info("collector", zap.String("gogc", strconv.Itoa(gcPercent)), zap.String("gogc_from", "default"))
	return func() { debug.SetGCPercent(prev) }
}
