package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CPU time of a proxy's process tree, read from /proc: what a request
// costs the proxy, whatever else the shared machine does meanwhile. It is
// the steadiest figure here: throughput and latency move with the load of
// the moment, CPU per request hardly does.

// userHZ is the unit of the times in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// treeCPU returns the user plus system CPU time used so far by pid and
// all its descendants.
func treeCPU(pid int) (time.Duration, error) {
	ticks, err := sumTree(pid, "stat", statTicks)
	return time.Duration(ticks) * time.Second / userHZ, err
}

// statTicks reads utime plus stime, in ticks, from /proc/PID/stat: the
// 12th and 13th fields after the command name (see statPIDs).
func statTicks(stat string) (int64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no (comm) in %q", stat)
	}
	f := strings.Fields(stat[end+1:]) // state, ppid, ..., utime (11), stime (12)
	if len(f) < 13 {
		return 0, fmt.Errorf("too few fields in %q", stat)
	}
	var total int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("utime or stime %q: %w", s, err)
		}
		total += v
	}
	return total, nil
}

// cpuMeter measures a proxy's CPU over one run; a zero pid (direct) reads
// as nothing used.
type cpuMeter struct {
	pid   int
	start time.Duration
	err   error
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	if pid != 0 {
		m.start, m.err = treeCPU(pid)
	}
	return m
}

// perRequest returns the CPU used since startCPU, in µs per request.
func (m *cpuMeter) perRequest(requests int) (float64, error) {
	if m.pid == 0 || requests == 0 {
		return 0, m.err
	}
	if m.err != nil {
		return 0, m.err
	}
	end, err := treeCPU(m.pid)
	if err != nil {
		return 0, err
	}
	return float64((end - m.start).Microseconds()) / float64(requests), nil
}
