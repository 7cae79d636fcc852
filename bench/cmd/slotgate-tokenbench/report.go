package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// results is the JSON the driver writes: what ran, and per configuration
// the medians and every run.
type results struct {
	Time     time.Time      `json:"time"`
	Command  string         `json:"command"`
	CPUs     int            `json:"cpus"`
	Reps     int            `json:"reps"`
	Deadline string         `json:"deadline"`
	Engine   engineSpec     `json:"engine"`
	Workload workload       `json:"workload"`
	Configs  []configReport `json:"configs"`
}

// configReport is one configuration's medians and runs.
type configReport struct {
	config
	Median configResult   `json:"median"`
	Runs   []configResult `json:"runs"`
}

func newResults(o options, argv []string, cfgs []config, runs [][]configResult) results {
	res := results{Time: time.Now().UTC(), Command: strings.Join(argv, " "), CPUs: runtime.NumCPU(), Reps: o.reps,
		Deadline: o.deadline.String(), Engine: o.engine, Workload: o.workload}
	for i, c := range cfgs {
		res.Configs = append(res.Configs, configReport{config: c, Median: medianOf(runs[i]), Runs: runs[i]})
	}
	return res
}

// writeTable writes the medians as a Markdown table, one row per
// configuration.
func writeTable(w io.Writer, res results) {
	fmt.Fprintf(w, "\nMedians of %d run(s); TTFT in ms; counts are sent / served / refused / timed out / failed.\n\n", res.Reps)
	fmt.Fprintln(w, "| configuration | short TTFT p50 | p90 | p99 | huge TTFT p50 | max | short requests | huge requests | engine's peak before first token |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range res.Configs {
		m := c.Median
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Name,
			num(m.Short.TTFTP50), num(m.Short.TTFTP90), num(m.Short.TTFTP99), num(m.Huge.TTFTP50), num(m.Huge.TTFTMax),
			counts(m.Short), counts(m.Huge), num(m.EnginePeakBeforeFirstToken))
	}
}

func counts(s classSummary) string {
	return strings.Join([]string{num(s.Sent), num(s.Served), num(s.Refused), num(s.TimedOut), num(s.Failed)}, " / ")
}

// num prints a whole number as such, anything else with one decimal.
func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// save writes res to dir/<time>-tokens.json through a temporary file, so
// that a reader never sees half a file, and returns the path.
func save(dir string, res results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, res.Time.Format("20060102T150405Z")+"-tokens.json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}
