package command

import (
	"fmt"
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

// readGOGC returns the environment's GOGC, which Go has read already,
// or "" when it has none (empty is none, as for slotgate's own
// variables). Go takes off or an integer and reads anything else as its
// default, 100, silently; slotgate refuses it, naming the value, as it
// does its own settings.
func readGOGC(env map[string]string) (string, error) {
	v := env["GOGC"]
	if v == "" || v == "off" {
		return v, nil
	}
	if _, err := strconv.ParseInt(v, 10, 32); err != nil {
		return "", fmt.Errorf("GOGC: must be off or an integer, the collector's percent, got %q", v)
	}
	return v, nil
}

// collectorPace sets the collector's pace to gcPercent unless gogc, the
// environment's GOGC (readGOGC), is set, and logs the pace and where it
// came from. It returns the function that puts the pace back, for when
// Run returns (a test's process runs Run again).
func collectorPace(gogc string, log *zap.Logger) (restore func()) {
	if gogc != "" {
		log.Info("collector", zap.String("gogc", gogc), zap.String("gogc_from", "GOGC"))
		return func() {}
	}
	prev := debug.SetGCPercent(gcPercent)
	log.Info("collector", zap.String("gogc", strconv.Itoa(gcPercent)), zap.String("gogc_from", "default"))
	return func() { debug.SetGCPercent(prev) }
}
