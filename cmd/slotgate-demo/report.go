package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/slotgate/slotgate/loadgen"
)

// loadReport is the part of slotgate-loadgen's --json report the demo
// reads. The demo decodes the JSON, whose names are stable (report
// version 1 only ever gains fields), rather than depending on the Go type.
type loadReport struct {
	Version         int              `json:"version"`
	Sent            int64            `json:"sent"`
	OK              int64            `json:"ok"`
	OKFirstTry      int64            `json:"ok_first_try"`
	ByStatus        map[string]int64 `json:"by_status"`
	DurationSeconds float64          `json:"duration_seconds"`
	TTFT            loadgen.Summary  `json:"ttft_seconds"`
	// Tries counts every try sent, retries included: Retries = Tries - Sent.
	Tries   int64 `json:"tries"`
	Retries int64 `json:"retries"`
	// TimedOut counts the requests the client's deadline ended
	// (by_status["deadline"]); GaveUp those whose every try was refused.
	TimedOut int64 `json:"timed_out"`
	GaveUp   int64 `json:"gave_up"`
	// GoodputPerSecond is requests served within the deadline per second.
	GoodputPerSecond float64 `json:"goodput_per_second"`
}

// readLoadReport reads and decodes slotgate-loadgen's --json report.
func readLoadReport(path string) (loadReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return loadReport{}, fmt.Errorf("read load generator results: %w", err)
	}
	r, err := decodeLoadReport(b)
	if err != nil {
		return loadReport{}, fmt.Errorf("load generator results %s: %w", path, err)
	}
	return r, nil
}

// decodeLoadReport decodes a report of version 1; anything else is an
// error, since the demo's checks rely on the fields' meaning.
func decodeLoadReport(b []byte) (loadReport, error) {
	var r loadReport
	if err := json.Unmarshal(b, &r); err != nil {
		return loadReport{}, fmt.Errorf("parse: %w", err)
	}
	if r.Version != loadgen.ReportVersion {
		return loadReport{}, fmt.Errorf("report version %d, want %d", r.Version, loadgen.ReportVersion)
	}
	return r, nil
}
