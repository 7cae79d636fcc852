package main

import (
	"fmt"
	"io"
	"strings"
)

// writeTables writes one Markdown table per scenario: each metric's median
// over the runs with its min–max, and ratios to direct's median.
func writeTables(w io.Writer, results []ScenarioResult) {
	for _, r := range results {
		fmt.Fprintf(w, "\n### %s\n\n%s\n\n", r.Name, r.About)
		head := append([]string{"target"}, r.Metrics...)
		for _, m := range r.Ratio {
			head = append(head, m+" ÷ direct")
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		var direct *Row
		for i := range r.Rows {
			if r.Rows[i].Target == "direct" {
				direct = &r.Rows[i]
			}
		}
		for _, row := range r.Rows {
			cells := []string{row.Target}
			for _, m := range r.Metrics {
				s, ok := row.Metrics[m]
				if !ok {
					cells = append(cells, "-") // not measured on this target
					continue
				}
				cells = append(cells, cell(s))
			}
			for _, m := range r.Ratio {
				c := "-"
				if direct != nil && direct.Metrics[m].Median != 0 {
					c = fmt.Sprintf("%.2f", row.Metrics[m].Median/direct.Metrics[m].Median)
				}
				cells = append(cells, c)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
}

// cell shows a summary as "median (min–max)", or the median alone when
// every run gave the same value.
func cell(s Summary) string {
	if s.Min == s.Max {
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

// num prints a value with about three significant digits.
func num(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e6:
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
