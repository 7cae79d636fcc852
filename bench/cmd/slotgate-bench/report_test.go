package main

import (
	"strings"
	"testing"
)

func TestCellAndNum(t *testing.T) {
	for _, tc := range []struct {
		s    Summary
		want string
	}{
		{Summary{Median: 8, Min: 8, Max: 8}, "8"},
		{Summary{Median: 12345.6, Min: 12000.2, Max: 13000.9}, "12346 (12000–13001)"},
		{Summary{Median: 0.1734, Min: 0.17, Max: 0.2}, "0.173 (0.17–0.2)"},
		{Summary{Median: 22.81, Min: 20.04, Max: 25.55}, "22.8 (20.0–25.6)"},
	} {
		if got := cell(tc.s); got != tc.want {
			t.Errorf("cell(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestWriteTablesRatio(t *testing.T) {
	var b strings.Builder
	writeTables(&b, []ScenarioResult{{
		Name: "fast", About: "x", Metrics: []string{"req/s"}, Ratio: []string{"req/s"},
		Rows: []Row{
			{Target: "direct", Metrics: map[string]Summary{"req/s": {Median: 200, Min: 200, Max: 200}}},
			{Target: "proxy", Metrics: map[string]Summary{"req/s": {Median: 100, Min: 100, Max: 100}}},
		},
	}})
	for _, want := range []string{"| target | req/s | req/s ÷ direct |", "| direct | 200 | 1.00 |", "| proxy | 100 | 0.50 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}
