package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/internal/childproc"
	"github.com/slotgate/slotgate/loadgen"
)

// summary is the demo's result, printed and optionally written as JSON.
type summary struct {
	Modes     []modeResult       `json:"modes"`
	Processes []childproc.Record `json:"processes"`
}

// modeResult is one burst: what the clients saw (the load generator's
// figures) and what the frontend counted.
type modeResult struct {
	Mode          string  `json:"mode"`
	Retries       int     `json:"retries"`
	Sent          int     `json:"sent"`
	Served        int     `json:"served"`
	ClientSaw529  int     `json:"client_529"`
	Other         int     `json:"other_statuses"`
	TTFTP50       float64 `json:"ttft_p50_seconds"`
	TTFTP99       float64 `json:"ttft_p99_seconds"`
	Absorbed529   int64   `json:"absorbed_529"`
	Worker529     int64   `json:"worker_529"`
	Exclusions    int64   `json:"exclusions"`
	BusyFlips     int64   `json:"busy_flips"`
	FrontendCount int64   `json:"frontend_requests"`
}

func newModeResult(m mode, lr loadgen.Report, st router.Stats) modeResult {
	r := modeResult{
		Mode: m.name, Retries: m.retries, Sent: int(lr.Sent),
		Served: int(lr.ByStatus["200"]), ClientSaw529: int(lr.ByStatus["529"]),
		TTFTP50: lr.TTFT.P50, TTFTP99: lr.TTFT.P99,
		Absorbed529: st.Absorbed529, Worker529: st.Worker529, Exclusions: st.Exclusions, BusyFlips: st.BusyFlips,
		FrontendCount: st.Requests,
	}
	for status, n := range lr.ByStatus {
		if status != "200" && status != "529" {
			r.Other += int(n)
		}
	}
	return r
}

func (s summary) print(out io.Writer) {
	fmt.Fprintf(out, "\nSummary: the same burst through each frontend\n")
	fmt.Fprintf(out, "  %-26s", "")
	for _, m := range s.Modes {
		fmt.Fprintf(out, " %-18s", m.Mode)
	}
	fmt.Fprintln(out)
	rows := []struct {
		label string
		value func(m modeResult) string
	}{
		{"requests sent", func(m modeResult) string { return fmt.Sprint(m.Sent) }},
		{"served (200)", func(m modeResult) string { return fmt.Sprint(m.Served) }},
		{"TTFT p50 / p99", func(m modeResult) string { return fmt.Sprintf("%.3f / %.3f s", m.TTFTP50, m.TTFTP99) }},
		{"529s seen by clients", func(m modeResult) string { return fmt.Sprint(m.ClientSaw529) }},
		{"529s absorbed by retries", func(m modeResult) string { return fmt.Sprint(m.Absorbed529) }},
		{"workers' 529s in all", func(m modeResult) string { return fmt.Sprint(m.Worker529) }},
		{"busy workers left out", func(m modeResult) string { return fmt.Sprint(m.Exclusions) }},
		{"busy flips (all workers)", func(m modeResult) string { return fmt.Sprint(m.BusyFlips) }},
		{"other answers", func(m modeResult) string { return fmt.Sprint(m.Other) }},
	}
	for _, r := range rows {
		fmt.Fprintf(out, "  %-26s", r.label)
		for _, m := range s.Modes {
			fmt.Fprintf(out, " %-18s", r.value(m))
		}
		fmt.Fprintln(out)
	}
}

func (s summary) writeJSON(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	return nil
}
