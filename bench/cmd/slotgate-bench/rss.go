package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Resident memory of a process tree, read from /proc: a proxy may fork
// workers (nginx does, HAProxy in master-worker mode), and what a queued
// request costs is the whole tree's.

// treeRSS returns the VmRSS, in KiB, of pid and all its descendants.
func treeRSS(pid int) (int, error) {
	kib, err := sumTree(pid, "status", func(s string) (int64, error) {
		v, err := vmRSS(s)
		return int64(v), err
	})
	return int(kib), err
}

// sumTree adds up what parse reads from /proc/P/file for pid and each of
// its descendants P. A descendant that exits meanwhile counts nothing.
func sumTree(pid int, file string, parse func(string) (int64, error)) (int64, error) {
	kids, err := childrenOf()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, p := range descendants(pid, kids) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p, file))
		if err != nil {
			if p == pid {
				return 0, err
			}
			continue // a worker that has just exited
		}
		v, err := parse(string(b))
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/%s: %w", p, file, err)
		}
		total += v
	}
	return total, nil
}

// childrenOf maps every process in /proc to its children.
func childrenOf() (map[int][]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	kids := map[int][]int{}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone since the glob
		}
		pid, ppid, err := statPIDs(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		kids[ppid] = append(kids[ppid], pid)
	}
	return kids, nil
}

// descendants returns pid followed by every process below it in kids.
func descendants(pid int, kids map[int][]int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// statPIDs reads the pid and the parent's pid from /proc/PID/stat, whose
// second field, the command name in parentheses, may itself hold spaces
// and parentheses: the fields after it start after its last ')'.
func statPIDs(stat string) (pid, ppid int, err error) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 1 || end < open {
		return 0, 0, fmt.Errorf("no (comm) in %q", stat)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(stat[:open]))
	if err != nil {
		return 0, 0, fmt.Errorf("pid: %w", err)
	}
	f := strings.Fields(stat[end+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("no ppid in %q", stat)
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, fmt.Errorf("ppid: %w", err)
	}
	return pid, ppid, nil
}

// vmRSS returns the VmRSS line of /proc/PID/status in KiB.
func vmRSS(status string) (int, error) {
	for l := range strings.SplitSeq(status, "\n") {
		rest, ok := strings.CutPrefix(l, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmRSS line %q: want a count of kB", l)
		}
		return strconv.Atoi(f[0])
	}
	return 0, fmt.Errorf("no VmRSS line (a zombie or kernel thread?)")
}
