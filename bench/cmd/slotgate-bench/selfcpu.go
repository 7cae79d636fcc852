package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The driver's own share of the machine (issue 17): the client runs on
// the same cores as the proxy it measures, so a client that takes much of
// them lowers every target's figures, and hides how far apart they are.
// The share is the driver process's CPU (user+system, from
// /proc/self/stat) over the CPU the whole machine was busy with (from
// /proc/stat) during the run. On a machine shared with other work the
// denominator holds that work too, which lowers the share: it is a floor.

// clientShareWarn is the share above which the report says loudly that
// the client, not the target, may be what was measured.
const clientShareWarn = 1.0 / 3

// cpuTicks is a reading of the driver's and the machine's CPU, in ticks.
type cpuTicks struct {
	self, busy, total int64
}

// readCPUTicks reads /proc/self/stat and /proc/stat.
func readCPUTicks() (cpuTicks, error) {
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return cpuTicks{}, err
	}
	all, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, err
	}
	s, err := statTicks(string(self))
	if err != nil {
		return cpuTicks{}, fmt.Errorf("/proc/self/stat: %w", err)
	}
	b, total, err := busyTicks(string(all))
	if err != nil {
		return cpuTicks{}, fmt.Errorf("/proc/stat: %w", err)
	}
	return cpuTicks{self: s, busy: b, total: total}, nil
}

// busyTicks reads the machine's busy and total time from /proc/stat's
// first line, "cpu user nice system idle iowait irq softirq steal ...":
// busy is all but idle and iowait (guest time is already within user and
// nice).
func busyTicks(stat string) (busy, total int64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("first line %q: want cpu and at least 8 counters", line)
	}
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("counter %d %q: want a count of ticks", i+1, s)
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

// machineBusy is the share of the machine's CPU time that was busy
// between a and b, as a fraction: near 1, the cores were saturated, and a
// client's share is CPU taken from the target.
func machineBusy(a, b cpuTicks) float64 {
	total := b.total - a.total
	if total <= 0 {
		return 0
	}
	return min(1, float64(b.busy-a.busy)/float64(total))
}

// share is the driver's part of the machine's busy CPU between a and b,
// as a fraction; 0 when the machine was idle or a reading failed.
func share(a, b cpuTicks) float64 {
	return partOfBusy(float64(b.self-a.self), a, b)
}

// partOfBusy is what ticks of CPU (the driver's, or a client process's
// such as wrk's) make of the machine's busy CPU between a and b, as a
// fraction; 0 when the machine was idle.
func partOfBusy(ticks float64, a, b cpuTicks) float64 {
	busy := b.busy - a.busy
	if busy <= 0 {
		return 0
	}
	return min(1, ticks/float64(busy))
}

// clientWarnings names every target of every scenario whose median
// "client CPU %" was over clientShareWarn.
func clientWarnings(rs []ScenarioResult) []string {
	var out []string
	for _, sc := range rs {
		for _, row := range sc.Rows {
			s, ok := row.Metrics[clientCPUMetric]
			if ok && s.Median > 100*clientShareWarn {
				out = append(out, fmt.Sprintf("%s on %s: the driver's client took %.0f%% of the machine's busy CPU (over a third), the machine %.0f%% busy: "+
					"the figures may measure the client as much as the target", sc.Name, row.Target, s.Median, row.Metrics[machineBusyMetric].Median))
			}
		}
	}
	return out
}
