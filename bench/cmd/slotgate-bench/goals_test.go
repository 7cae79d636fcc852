package main

import (
	"strings"
	"testing"
)

// res builds a scenario result whose rows hold one metric's runs per
// target.
func res(name, metric string, n, q int, runs map[string][]float64) ScenarioResult {
	sc := ScenarioResult{Name: name, N: n, Q: q}
	for _, target := range []string{"direct", "slotgate", "haproxy"} {
		if vs, ok := runs[target]; ok {
			sc.Rows = append(sc.Rows, Row{Target: target, Metrics: map[string]Summary{metric: summarize(vs)}})
		}
	}
	return sc
}

func TestGoals(t *testing.T) {
	rs := []ScenarioResult{
		res("fast-c64", "req/s", 256, 16, map[string][]float64{"slotgate": {900, 1000, 1100}, "haproxy": {2000}}),
		res("fast-c1", "added p50 ms", 256, 16, map[string][]float64{"slotgate": {0.1}, "haproxy": {0.15}}),
		res("stream", "added TTFT p50 ms", 256, 16, map[string][]float64{"slotgate": {0.3}}),
		res("overload", "queued max", 8, 16, map[string][]float64{"slotgate": {16, 17, 12}}),
		res("memory", "KiB/queued", 8, 1000, map[string][]float64{"slotgate": {7}, "haproxy": {0}}),
		res("abandon", "reached engine", 8, 32, map[string][]float64{"slotgate": {8, 9, 8}}),
	}
	want := map[string]struct {
		measured float64
		met      bool
		missing  string
	}{
		"fast path c=64: req/s, slotgate ÷ haproxy":                                                      {0.5, false, ""},
		"fast path c=1: added p50, slotgate ÷ haproxy":                                                   {0.1 / 0.15, true, ""},
		"stream: added TTFT p50, slotgate":                                                               {0.3, false, ""}, // strictly under 0.3
		"overload: rejected/s, slotgate ÷ haproxy":                                                       {0, false, "no \"rejected/s\""},
		"overload: queued max, slotgate, worst run (Q=16)":                                               {17, false, ""},
		"memory: KiB per queued request, slotgate ÷ haproxy":                                             {0, false, "no ratio"},
		"abandon: reached engine, slotgate, run furthest from 8":                                         {9, false, ""},
		"overload: engine max, slotgate, worst run (N=8)":                                                {0, false, "no \"engine max\""},
		"overload: rejection p99, slotgate ÷ haproxy":                                                    {0, false, "no \"rej p99 ms\""},
		"fast path c=64: proxy CPU per request, slotgate ÷ haproxy":                                      {0, false, "no \"proxy CPU µs/req\""},
		"overload: proxy CPU per answer, slotgate ÷ haproxy":                                             {0, false, "no \"proxy CPU µs/req\""},
		"streams-1024: proxy CPU per event, slotgate ÷ haproxy":                                          {0, false, "scenario streams-1024 not run"},
		"streams-1024: added TTFT p99, slotgate − haproxy":                                               {0, false, "scenario streams-1024 not run"},
		"streams-1024: added ITL p99, slotgate − haproxy":                                                {0, false, "scenario streams-1024 not run"},
		"streams-1024: RSS per open stream, slotgate ÷ haproxy":                                          {0, false, "scenario streams-1024 not run"},
		"streams: events lost or reordered through slotgate, worst run of each streams scenario, summed": {0, false, "no streams scenario run"},
		"fast path c=64 under wrk: req/s, slotgate ÷ haproxy":                                            {0, false, "scenario fast-wrk-c64 not run"},
		"overload under wrk: rejected/s, slotgate ÷ haproxy":                                             {0, false, "scenario overload-wrk not run"},
		"overload under wrk: proxy CPU per answer, slotgate ÷ haproxy":                                   {0, false, "scenario overload-wrk not run"},
		"overload under wrk: engine max, slotgate, worst run (N=8)":                                      {0, false, "scenario overload-wrk not run"},
		"overload under wrk: queued max, slotgate, worst run (Q=16)":                                     {0, false, "scenario overload-wrk not run"},
	}
	gs := goals(rs)
	if len(gs) != len(want) {
		t.Fatalf("%d goals, want %d", len(gs), len(want))
	}
	for _, g := range gs {
		w, ok := want[g.Goal]
		if !ok {
			t.Errorf("unexpected goal %q", g.Goal)
			continue
		}
		if g.Met != w.met || (w.missing == "") != (g.Missing == "") || !strings.Contains(g.Missing, w.missing) {
			t.Errorf("%s: met %v, missing %q; want met %v, missing containing %q", g.Goal, g.Met, g.Missing, w.met, w.missing)
		}
		if d := g.Measured - w.measured; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: measured %v, want %v", g.Goal, g.Measured, w.measured)
		}
	}
}

func TestCheckAndMargin(t *testing.T) {
	val := func(v float64) func() (float64, error) { return func() (float64, error) { return v, nil } }
	for _, tc := range []struct {
		op, unit  string
		want, got float64
		met       bool
		margin    string
	}{
		{">=", "x", 1.2, 0.6, false, "missed by 50%"},
		{">=", "x", 1, 1.5, true, "50% to spare"},
		{"<=", "x", 1, 1, true, "on the bound"},
		{"<", "ms", 0.3, 0.3, false, "on the bound"},
		{"<", "ms", 0.3, 0.1, true, "0.2 ms to spare"},
		{"<=", "", 16, 17, false, "missed by 1"},
		{"==", "", 8, 6, false, "missed by 2"},
		{"==", "", 8, 8, true, "exactly"},
	} {
		g := check(goalSpec{goal: "g", op: tc.op, unit: tc.unit, want: tc.want, value: val(tc.got)})
		if g.Met != tc.met || margin(g) != tc.margin {
			t.Errorf("%v %s %v: met %v, margin %q; want %v, %q", tc.got, tc.op, tc.want, g.Met, margin(g), tc.met, tc.margin)
		}
	}
}

func TestWriteGoals(t *testing.T) {
	var b strings.Builder
	writeGoals(&b, []Goal{
		{Goal: "a", Op: ">=", Want: 1.2, Unit: "x", Measured: 0.6, Margin: -0.6},
		{Goal: "b", Op: "<=", Want: 16, Missing: "scenario overload not run"},
	})
	for _, want := range []string{
		"| a | 0.6x | ≥ 1.2x | no | missed by 50% |",
		"| b | - | ≤ 16 | not checked: scenario overload not run | - |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// streamsResult builds a streams-at-scale result: each target's runs of
// each metric.
func streamsResult(name string, streams int, runs map[string]map[string][]float64) ScenarioResult {
	sc := ScenarioResult{Name: name, Streams: streams}
	for _, target := range []string{"direct", "slotgate", "haproxy"} {
		ms, ok := runs[target]
		if !ok {
			continue
		}
		row := Row{Target: target, Metrics: map[string]Summary{}}
		for m, vs := range ms {
			row.Metrics[m] = summarize(vs)
		}
		sc.Rows = append(sc.Rows, row)
	}
	return sc
}

func TestStreamGoals(t *testing.T) {
	rs := results{
		streamsResult("streams-1024", 1024, map[string]map[string][]float64{
			"slotgate": {cpuPerEventMetric: {30, 32, 34}, "added TTFT p99 ms": {5, 6, 7}, "added ITL p99 ms": {1},
				"RSS KiB/stream": {20}, "lost": {0, 0, 0}, "reordered": {0, 0, 0}},
			"haproxy": {cpuPerEventMetric: {8}, "added TTFT p99 ms": {-1}, "added ITL p99 ms": {2}, "RSS KiB/stream": {40}},
		}),
		streamsResult("streams-256", 256, map[string]map[string][]float64{
			"slotgate": {"lost": {0, 3, 1}, "reordered": {0, 0, 2}},
		}),
		{Name: "fast-wrk-c64", Rows: []Row{
			{Target: "slotgate", Metrics: map[string]Summary{"req/s": summarize([]float64{8000})}},
			{Target: "haproxy", Metrics: map[string]Summary{"req/s": summarize([]float64{10000})}},
		}},
		{Name: "overload-wrk", Rows: []Row{
			{Target: "slotgate", Metrics: map[string]Summary{"rejected/s": summarize([]float64{90000, 99000, 95000}),
				"proxy CPU µs/req": summarize([]float64{11}), "engine max": summarize([]float64{8, 9, 8}), "queued max": summarize([]float64{16, 16})}},
			{Target: "haproxy", Metrics: map[string]Summary{"rejected/s": summarize([]float64{100000}), "proxy CPU µs/req": summarize([]float64{10})}},
		}},
	}
	want := []struct {
		measured float64
		met      bool
	}{
		{4, false},    // 32 ÷ 8
		{7, false},    // 6 − (−1): a difference, where a ratio to −1 would mean nothing
		{-1, true},    // 1 − 2
		{0.5, true},   // 20 ÷ 40
		{5, false},    // streams-256's worst runs: 3 lost, 2 reordered
		{0.8, true},   // on the bound
		{0.95, false}, // the median 95,000 ÷ 100,000
		{1.1, false},  // 11 ÷ 10
		{9, false},    // the worst run over N
		{16, true},    // on Q
	}
	gs := checkAll(streamGoals(rs))
	if len(gs) != len(want) {
		t.Fatalf("%d goals, want %d", len(gs), len(want))
	}
	for i, g := range gs {
		if g.Missing != "" || g.Met != want[i].met || g.Measured < want[i].measured-1e-9 || g.Measured > want[i].measured+1e-9 {
			t.Errorf("%s: measured %v, met %v, missing %q; want %v, met %v", g.Goal, g.Measured, g.Met, g.Missing, want[i].measured, want[i].met)
		}
	}
}
