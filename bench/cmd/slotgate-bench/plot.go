package main

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The plot of latency against offered load (issue 6): the fast path's
// sweep of concurrencies, p50 (solid) and p99 (dashed) per target, both
// axes logarithmic (concurrency 1 to 128, latencies from tens of
// microseconds to tens of milliseconds). Hand-written SVG, so the driver
// needs nothing beyond the standard library.

type point struct{ conc, p50, p99 float64 }

type series struct {
	name   string
	points []point // by concurrency
}

// latencySeries collects, per target, the medians of the fast-path
// scenarios (those with a concurrency), in the targets' first order.
func latencySeries(rs []ScenarioResult) []series {
	var out []series
	for _, sc := range rs {
		if sc.Concurrency <= 0 {
			continue
		}
		for _, row := range sc.Rows {
			i := slices.IndexFunc(out, func(s series) bool { return s.name == row.Target })
			if i < 0 {
				out = append(out, series{name: row.Target})
				i = len(out) - 1
			}
			out[i].points = append(out[i].points, point{float64(sc.Concurrency), row.Metrics["p50 ms"].Median, row.Metrics["p99 ms"].Median})
		}
	}
	for _, s := range out {
		slices.SortFunc(s.points, func(a, b point) int { return int(a.conc - b.conc) })
	}
	return out
}

// The plot's frame, in SVG user units.
const (
	plotW, plotH                   = 760, 460
	padL, padR, padT, padB         = 70, 180, 50, 60
	innerW, innerH         float64 = plotW - padL - padR, plotH - padT - padB
)

// logScale maps [lo, hi] logarithmically onto [0, 1].
type logScale struct{ lo, hi float64 }

func (s logScale) at(v float64) float64 {
	return (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
}

func (s logScale) x(v float64) float64 { return padL + s.at(v)*innerW }
func (s logScale) y(v float64) float64 { return padT + (1-s.at(v))*innerH }

// scales returns the x scale (the concurrencies measured) and the y scale
// (whole decades around every positive latency).
func scales(ss []series) (x, y logScale, concs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			concs = append(concs, p.conc)
			for _, v := range []float64{p.p50, p.p99} {
				if v > 0 {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
		}
	}
	slices.Sort(concs)
	concs = slices.Compact(concs)
	x = logScale{concs[0], concs[len(concs)-1]}
	if x.hi <= x.lo {
		x.hi = x.lo * 10
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.1, 1
	}
	y = logScale{math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))}
	if y.hi <= y.lo {
		y.hi = y.lo * 10
	}
	return x, y, concs
}

// palette gives the usual targets fixed colours, so plots of different
// runs read alike.
var palette = map[string]string{
	"direct": "#7f7f7f", "slotgate": "#1f77b4", "haproxy": "#ff7f0e", "nginx": "#2ca02c", "haproxy-maxqueue": "#d62728",
}

var spare = []string{"#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}

func colour(name string, i int) string {
	if c, ok := palette[name]; ok {
		return c
	}
	return spare[i%len(spare)]
}

// renderLatencySVG draws ss; nil when there is nothing to draw.
func renderLatencySVG(ss []series, title string) []byte {
	if len(ss) == 0 || len(ss[0].points) == 0 {
		return nil
	}
	var b strings.Builder
	x, y := openSVG(&b, ss, title, "offered load: concurrent closed-loop clients (log scale)", "latency, ms (log scale)")
	for i, s := range ss {
		line(&b, s, x, y, colour(s.name, i))
	}
	legend(&b, ss, true)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// axes draws the frame: a vertical grid line at each of xs, horizontal
// ones at each decade of y and its steps, and the two axes' labels.
// openSVG writes the start of a plot of ss to b, the same for every plot
// of the bench: the svg element, a white background, the title and the
// log-scale axes with their labels. It returns the scales to draw with.
func openSVG(b *strings.Builder, ss []series, title, xLabel, yLabel string) (x, y logScale) {
	x, y, ticks := scales(ss)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	text(b, plotW/2, 24, "middle", 13, title)
	axes(b, x, y, ticks, xLabel, yLabel)
	return x, y
}

func axes(b *strings.Builder, x, y logScale, concs []float64, xLabel, yLabel string) {
	for _, c := range concs {
		px := x.x(c)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px, padT, px, padT+innerH)
		text(b, px, padT+innerH+18, "middle", 12, num(c))
	}
	for d := y.lo; d <= y.hi*1.0001; d *= 10 {
		for k := 1.0; k < 10 && d*k <= y.hi*1.0001; k++ {
			py := y.y(d * k)
			stroke := "#eee"
			if k == 1 {
				stroke = "#ccc"
				text(b, padL-8, py+4, "end", 12, num(d))
			}
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", padL, py, padL+innerW, py, stroke)
		}
	}
	fmt.Fprintf(b, `<path d="M%d %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", padL, padT, padT+innerH, padL+innerW)
	text(b, padL+innerW/2, plotH-14, "middle", 12, xLabel)
	fmt.Fprintf(b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">%s</text>`+"\n", padT+innerH/2, padT+innerH/2, esc(yLabel))
}

// line draws one target: p50 solid with a dot per measurement, p99
// dashed. Points without a positive value have no place on a log axis
// and are left out.
func line(b *strings.Builder, s series, x, y logScale, col string) {
	for _, q := range []struct {
		class, dash string
		v           func(point) float64
	}{{"p50", "", func(p point) float64 { return p.p50 }}, {"p99", ` stroke-dasharray="6 4"`, func(p point) float64 { return p.p99 }}} {
		var pts []string
		for _, p := range s.points {
			if v := q.v(p); v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x.x(p.conc), y.y(v)))
			}
		}
		fmt.Fprintf(b, `<polyline class="%s" data-target="%s" points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n",
			q.class, esc(s.name), strings.Join(pts, " "), col, q.dash)
	}
	for _, p := range s.points {
		if p.p50 > 0 {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x.x(p.conc), y.y(p.p50), col)
		}
	}
}

// legend names each series' colour and, with styles, what solid and
// dashed lines mean.
func legend(b *strings.Builder, ss []series, styles bool) {
	lx, ly := padL+innerW+20, float64(padT+10)
	for i, s := range ss {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly, lx+24, ly, colour(s.name, i))
		text(b, lx+30, ly+4, "start", 12, s.name)
		ly += 20
	}
	if !styles {
		return
	}
	ly += 10
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", lx, ly, lx+24, ly)
	text(b, lx+30, ly+4, "start", 12, "p50")
	ly += 20
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", lx, ly, lx+24, ly)
	text(b, lx+30, ly+4, "start", 12, "p99")
}

func text(b *strings.Builder, x, y float64, anchor string, size int, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d">%s</text>`+"\n", x, y, anchor, size, esc(s))
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // a strings.Builder does not fail
	return b.String()
}
