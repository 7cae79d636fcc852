package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Goal is one of issue 6's (or issue 17's) targets for slotgate, checked against this run.
type Goal struct {
	Goal     string  `json:"goal"`
	Measured float64 `json:"measured"`
	Op       string  `json:"op"` // ">=", "<=", "<" or "=="
	Want     float64 `json:"want"`
	Unit     string  `json:"unit,omitempty"` // "x" for a ratio of two targets
	Met      bool    `json:"met"`
	// Margin is how far inside the goal (positive) or outside it
	// (negative) the measured value is, in Unit.
	Margin  float64 `json:"margin"`
	Missing string  `json:"missing,omitempty"` // why it could not be checked
}

type goalSpec struct {
	goal, op, unit string
	want           float64
	value          func() (float64, error)
}

// goals checks issue 6's targets: medians over the runs, except the
// bounds (engine max, queued max, abandoned), which every run must keep.
// The two CPU rows are the project's own aim, "as cheap per request as
// HAProxy", and explain the throughput rows.
func goals(rs []ScenarioResult) []Goal {
	r := results(rs)
	n, q := r.cap("overload", 8, 16)
	an, _ := r.cap("abandon", 8, 32)
	specs := []goalSpec{
		{"fast path c=64: req/s, slotgate ÷ haproxy", ">=", "x", 1, r.ratio("fast-c64", "req/s")},
		{"fast path c=1: added p50, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("fast-c1", "added p50 ms")},
		{"stream: added TTFT p50, slotgate", "<", "ms", 0.3, r.median("stream", "added TTFT p50 ms")},
		{"overload: rejected/s, slotgate ÷ haproxy", ">=", "x", 1.2, r.ratio("overload", "rejected/s")},
		{"overload: rejection p99, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("overload", "rej p99 ms")},
		{fmt.Sprintf("overload: engine max, slotgate, worst run (N=%d)", n), "<=", "", float64(n), r.worst("overload", "engine max")},
		{fmt.Sprintf("overload: queued max, slotgate, worst run (Q=%d)", q), "<=", "", float64(q), r.worst("overload", "queued max")},
		{"memory: KiB per queued request, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("memory", "KiB/queued")},
		{"fast path c=64: proxy CPU per request, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("fast-c64", "proxy CPU µs/req")},
		{"overload: proxy CPU per answer, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("overload", "proxy CPU µs/req")},
		{fmt.Sprintf("abandon: reached engine, slotgate, run furthest from %d", an), "==", "", float64(an), r.furthest("abandon", "reached engine", float64(an))},
	}
	return checkAll(append(specs, streamGoals(r)...))
}

// streamGoals are issue 17's targets: streams at scale, and the fast path
// and the overload storm under wrk, whose client does not bound the rate.
// The added latencies are compared as differences: HAProxy's own added
// latency may be zero or below (noise), where a ratio means nothing.
func streamGoals(r results) []goalSpec {
	return []goalSpec{
		{"streams-1024: proxy CPU per event, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("streams-1024", cpuPerEventMetric)},
		{"streams-1024: added TTFT p99, slotgate − haproxy", "<=", "ms", 0, r.diff("streams-1024", "added TTFT p99 ms")},
		{"streams-1024: added ITL p99, slotgate − haproxy", "<=", "ms", 0, r.diff("streams-1024", "added ITL p99 ms")},
		{"streams-1024: RSS per open stream, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("streams-1024", "RSS KiB/stream")},
		{"streams: events lost or reordered through slotgate, worst run of each streams scenario, summed", "==", "", 0, r.lostOrReordered},
		{"fast path c=64 under wrk: req/s, slotgate ÷ haproxy", ">=", "x", 0.8, r.ratio("fast-wrk-c64", "req/s")},
		{"overload under wrk: rejected/s, slotgate ÷ haproxy", ">=", "x", 1, r.ratio("overload-wrk", "rejected/s")},
		{"overload under wrk: proxy CPU per answer, slotgate ÷ haproxy", "<=", "x", 1, r.ratio("overload-wrk", "proxy CPU µs/req")},
		{"overload under wrk: engine max, slotgate, worst run (N=8)", "<=", "", 8, r.worst("overload-wrk", "engine max")},
		{"overload under wrk: queued max, slotgate, worst run (Q=16)", "<=", "", 16, r.worst("overload-wrk", "queued max")},
	}
}

func checkAll(specs []goalSpec) []Goal {
	out := make([]Goal, len(specs))
	for i, s := range specs {
		out[i] = check(s)
	}
	return out
}

func check(s goalSpec) Goal {
	g := Goal{Goal: s.goal, Op: s.op, Want: s.want, Unit: s.unit}
	v, err := s.value()
	if err != nil {
		g.Missing = err.Error()
		return g
	}
	g.Measured = v
	switch s.op {
	case ">=":
		g.Margin = v - s.want
		g.Met = g.Margin >= 0
	case "<=":
		g.Margin = s.want - v
		g.Met = g.Margin >= 0
	case "<":
		g.Margin = s.want - v
		g.Met = g.Margin > 0
	case "==":
		g.Margin = -math.Abs(v - s.want)
		g.Met = g.Margin == 0
	}
	return g
}

// results looks values up in a run's scenarios.
type results []ScenarioResult

func (r results) summary(scenario, target, metric string) (Summary, error) {
	i := slices.IndexFunc(r, func(s ScenarioResult) bool { return s.Name == scenario })
	if i < 0 {
		return Summary{}, fmt.Errorf("scenario %s not run", scenario)
	}
	j := slices.IndexFunc(r[i].Rows, func(row Row) bool { return row.Target == target })
	if j < 0 {
		return Summary{}, fmt.Errorf("%s: no %s row", scenario, target)
	}
	s, ok := r[i].Rows[j].Metrics[metric]
	if !ok || len(s.Runs) == 0 {
		return Summary{}, fmt.Errorf("%s: no %q for %s", scenario, metric, target)
	}
	return s, nil
}

// cap returns the scenario's N and Q, or the defaults when it was not run.
func (r results) cap(scenario string, n, q int) (int, int) {
	if i := slices.IndexFunc(r, func(s ScenarioResult) bool { return s.Name == scenario }); i >= 0 {
		return r[i].N, r[i].Q
	}
	return n, q
}

// diff is slotgate's median minus HAProxy's.
func (r results) diff(scenario, metric string) func() (float64, error) {
	return func() (float64, error) {
		a, err := r.summary(scenario, "slotgate", metric)
		if err != nil {
			return 0, err
		}
		b, err := r.summary(scenario, "haproxy", metric)
		if err != nil {
			return 0, err
		}
		return a.Median - b.Median, nil
	}
}

// lostOrReordered adds up, over the streams-at-scale scenarios run,
// slotgate's worst run of events lost and of events reordered.
func (r results) lostOrReordered() (float64, error) {
	total, seen := 0.0, false
	for _, sc := range r {
		if sc.Streams <= 0 {
			continue
		}
		for _, m := range []string{"lost", "reordered"} {
			s, err := r.summary(sc.Name, "slotgate", m)
			if err != nil {
				return 0, err
			}
			total += s.Max
			seen = true
		}
	}
	if !seen {
		return 0, errors.New("no streams scenario run")
	}
	return total, nil
}

// ratio is slotgate's median over HAProxy's.
func (r results) ratio(scenario, metric string) func() (float64, error) {
	return func() (float64, error) {
		a, err := r.summary(scenario, "slotgate", metric)
		if err != nil {
			return 0, err
		}
		b, err := r.summary(scenario, "haproxy", metric)
		if err != nil {
			return 0, err
		}
		if b.Median <= 0 {
			return 0, fmt.Errorf("%s: haproxy's %q median is %s, no ratio", scenario, metric, num(b.Median))
		}
		return a.Median / b.Median, nil
	}
}

func (r results) median(scenario, metric string) func() (float64, error) {
	return func() (float64, error) {
		s, err := r.summary(scenario, "slotgate", metric)
		return s.Median, err
	}
}

func (r results) worst(scenario, metric string) func() (float64, error) {
	return func() (float64, error) {
		s, err := r.summary(scenario, "slotgate", metric)
		return s.Max, err
	}
}

// furthest is slotgate's run furthest from want.
func (r results) furthest(scenario, metric string, want float64) func() (float64, error) {
	return func() (float64, error) {
		s, err := r.summary(scenario, "slotgate", metric)
		if err != nil {
			return 0, err
		}
		far := s.Runs[0]
		for _, v := range s.Runs {
			if math.Abs(v-want) > math.Abs(far-want) {
				far = v
			}
		}
		return far, nil
	}
}

// writeGoals writes the goals as a Markdown table.
func writeGoals(w io.Writer, gs []Goal) {
	fmt.Fprintf(w, "\n### targets\n\nissue 6's and issue 17's targets for slotgate, in this run: medians, except the bounds, which every run must keep; ratios are slotgate's over HAProxy-529's, differences slotgate's minus HAProxy-529's\n\n")
	fmt.Fprintf(w, "| goal | measured | wanted | met | by how much |\n|---|---|---|---|---|\n")
	for _, g := range gs {
		if g.Missing != "" {
			fmt.Fprintf(w, "| %s | - | %s %s | not checked: %s | - |\n", g.Goal, opSign(g.Op), withUnit(g.Want, g.Unit), g.Missing)
			continue
		}
		met := "no"
		if g.Met {
			met = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s %s | %s | %s |\n", g.Goal, withUnit(g.Measured, g.Unit), opSign(g.Op), withUnit(g.Want, g.Unit), met, margin(g))
	}
}

func opSign(op string) string {
	return strings.NewReplacer(">=", "≥", "<=", "≤", "==", "=").Replace(op)
}

func withUnit(v float64, unit string) string {
	switch unit {
	case "":
		return num(v)
	case "x":
		return num(v) + "x"
	default:
		return num(v) + " " + unit
	}
}

// margin says by how much a goal was missed, or how much room was left:
// a ratio goal's as a share of the wanted ratio, any other in its unit.
func margin(g Goal) string {
	m := withUnit(math.Abs(g.Margin), g.Unit)
	if g.Unit == "x" && g.Want != 0 {
		m = fmt.Sprintf("%.0f%%", 100*math.Abs(g.Margin)/g.Want)
	}
	switch {
	case g.Margin == 0 && g.Op == "==":
		return "exactly"
	case g.Margin == 0:
		return "on the bound"
	case g.Margin < 0:
		return "missed by " + m
	default:
		return m + " to spare"
	}
}
