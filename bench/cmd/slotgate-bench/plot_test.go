package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// svgCensus decodes svg as XML, failing the test when it is not well
// formed, and counts the polylines per class and target.
func svgCensus(t *testing.T, svg []byte) map[string]map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	got := map[string]map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		if se.Name.Local != "polyline" {
			continue
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		if got[attr["class"]] == nil {
			got[attr["class"]] = map[string]int{}
		}
		got[attr["class"]][attr["data-target"]]++
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return got
}

func TestRenderLatencySVG(t *testing.T) {
	for _, tc := range []struct {
		name string
		ss   []series
	}{
		{"four targets", []series{
			{"direct", []point{{1, 0.035, 0.17}, {4, 0.1, 0.5}, {16, 0.47, 5}, {64, 2.6, 13}, {128, 5, 30}}},
			{"slotgate", []point{{1, 0.33, 0.73}, {4, 0.6, 2}, {16, 2, 9.7}, {64, 9.5, 39}, {128, 20, 80}}},
			{"haproxy", []point{{1, 0.19, 0.37}, {4, 0.4, 1}, {16, 0.8, 7.8}, {64, 4.3, 27}, {128, 9, 50}}},
			{"nginx", []point{{1, 0.17, 0.36}, {4, 0.4, 1}, {16, 0.94, 5.7}, {64, 4.5, 24}, {128, 9, 45}}},
		}},
		{"one concurrency, a zero and an odd name", []series{
			{"a<b&c", []point{{16, 0, 1}}},
			{"slotgate", []point{{16, 2, 3}}},
		}},
	} {
		svg := renderLatencySVG(tc.ss, `latency "now" & <then>`)
		if strings.Contains(string(svg), "NaN") || strings.Contains(string(svg), "Inf") {
			t.Errorf("%s: NaN or Inf in the SVG:\n%s", tc.name, svg)
		}
		got := svgCensus(t, svg)
		for _, s := range tc.ss {
			for _, class := range []string{"p50", "p99"} {
				if n := got[class][s.name]; n != 1 {
					t.Errorf("%s: %d %s polylines for %s, want 1", tc.name, n, class, s.name)
				}
			}
		}
		if len(got["p50"]) != len(tc.ss) || len(got["p99"]) != len(tc.ss) {
			t.Errorf("%s: polylines for %v, want one per target", tc.name, got)
		}
	}
	if svg := renderLatencySVG(nil, "x"); svg != nil {
		t.Errorf("nothing to draw: got %d bytes, want nil", len(svg))
	}
}

func TestLatencySeries(t *testing.T) {
	row := func(target string, p50, p99 float64) Row {
		return Row{Target: target, Metrics: map[string]Summary{"p50 ms": {Median: p50}, "p99 ms": {Median: p99}}}
	}
	rs := []ScenarioResult{
		{Name: "fast-c16", Concurrency: 16, Rows: []Row{row("direct", 0.5, 5), row("slotgate", 2, 9)}},
		{Name: "overload", Rows: []Row{row("direct", 50, 60)}},
		{Name: "fast-c1", Concurrency: 1, Rows: []Row{row("direct", 0.03, 0.2), row("slotgate", 0.3, 0.7)}},
	}
	got := latencySeries(rs)
	if len(got) != 2 || got[0].name != "direct" || got[1].name != "slotgate" {
		t.Fatalf("series %+v, want direct then slotgate", got)
	}
	want := []point{{1, 0.03, 0.2}, {16, 0.5, 5}}
	if len(got[0].points) != 2 || got[0].points[0] != want[0] || got[0].points[1] != want[1] {
		t.Errorf("direct's points %v, want %v (sorted by concurrency, overload left out)", got[0].points, want)
	}
}

func TestLogScale(t *testing.T) {
	s := logScale{1, 100}
	for _, tc := range []struct{ v, want float64 }{{1, 0}, {10, 0.5}, {100, 1}} {
		if got := s.at(tc.v); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("at(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestCPUSeriesAndPlot(t *testing.T) {
	row := func(target string, cpu float64) Row {
		return Row{Target: target, Metrics: map[string]Summary{cpuPerEventMetric: {Median: cpu}}}
	}
	rs := []ScenarioResult{
		{Name: "streams-1024", Streams: 1024, Rows: []Row{row("direct", 0), row("slotgate", 30), row("haproxy", 8)}},
		{Name: "streams-long", Streams: 256, PromptBytes: 32 << 10, Rows: []Row{row("slotgate", 60)}},
		{Name: "fast-c64", Concurrency: 64, Rows: []Row{row("slotgate", 90)}},
		{Name: "streams-256", Streams: 256, Rows: []Row{row("direct", 0), row("slotgate", 40), row("haproxy", 9)}},
	}
	ss := cpuSeries(rs)
	if len(ss) != 2 || ss[0].name != "slotgate" || ss[1].name != "haproxy" {
		t.Fatalf("series %+v: want slotgate and haproxy, direct left out", ss)
	}
	if want := []point{{conc: 256, p50: 40}, {conc: 1024, p50: 30}}; len(ss[0].points) != 2 || ss[0].points[0] != want[0] || ss[0].points[1] != want[1] {
		t.Errorf("slotgate's points %v, want %v (sorted, long prompts and fast path left out)", ss[0].points, want)
	}
	svg := renderCPUSVG(ss, "cpu & <streams>")
	if strings.Contains(string(svg), "NaN") || strings.Contains(string(svg), "Inf") {
		t.Errorf("NaN or Inf in the SVG:\n%s", svg)
	}
	got := svgCensus(t, svg)
	if got["cpu"]["slotgate"] != 1 || got["cpu"]["haproxy"] != 1 || len(got["cpu"]) != 2 || len(got["p99"]) != 0 {
		t.Errorf("polylines %v: want one cpu line per proxy", got)
	}
	if renderCPUSVG(nil, "x") != nil {
		t.Error("nothing to draw: want nil")
	}
}
