package main

import (
	"fmt"
	"slices"
	"strings"
)

// The plot of proxy CPU per event against the streams held at once (issue
// 17), in the latency plot's style: one line per proxy, both axes
// logarithmic. direct has no proxy, so no CPU of its own, and no line.

// cpuSeries collects, per target, the median CPU per event of the
// streams-at-scale scenarios with short prompts (the long-context one is
// a different load at the same stream count), in the targets' first
// order, leaving out targets that spent none (direct).
func cpuSeries(rs []ScenarioResult) []series {
	var out []series
	for _, sc := range rs {
		if sc.Streams <= 0 || sc.PromptBytes > 0 {
			continue
		}
		for _, row := range sc.Rows {
			v := row.Metrics[cpuPerEventMetric].Median
			if v <= 0 {
				continue
			}
			i := slices.IndexFunc(out, func(s series) bool { return s.name == row.Target })
			if i < 0 {
				out = append(out, series{name: row.Target})
				i = len(out) - 1
			}
			out[i].points = append(out[i].points, point{conc: float64(sc.Streams), p50: v})
		}
	}
	for _, s := range out {
		slices.SortFunc(s.points, func(a, b point) int { return int(a.conc - b.conc) })
	}
	return out
}

// renderCPUSVG draws ss, each point's p50 being its CPU per event; nil
// when there is nothing to draw.
func renderCPUSVG(ss []series, title string) []byte {
	if len(ss) == 0 || len(ss[0].points) == 0 {
		return nil
	}
	var b strings.Builder
	x, y := openSVG(&b, ss, title, "SSE streams held open at once (log scale)", "proxy CPU per event, µs (log scale)")
	for i, s := range ss {
		col := colour(s.name, i)
		var pts []string
		for _, p := range s.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x.x(p.conc), y.y(p.p50)))
		}
		fmt.Fprintf(&b, `<polyline class="cpu" data-target="%s" points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n",
			esc(s.name), strings.Join(pts, " "), col)
		for _, p := range s.points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x.x(p.conc), y.y(p.p50), col)
		}
	}
	legend(&b, ss, false)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
