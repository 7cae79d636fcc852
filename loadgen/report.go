package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ReportVersion is Report.Version. Fields may be added to the JSON report
// without changing it; it changes when a field is renamed, removed or
// changes meaning.
const ReportVersion = 1

// Report is the result of a run. Its JSON form, written by WriteJSON, is
// stable (see ReportVersion):
//
//	{
//	  "version": 1,
//	  "config": {…},                  // what was asked, see RunConfig
//	  "sent": 20,                     // requests sent; the sum of by_status
//	  "ok": 10,                       // successful: 2xx with a complete body
//	  "ok_first_try": 4,              // of ok, those served at their first try
//	  "dropped": 0,                   // open loop: arrivals not sent (max outstanding)
//	  "by_status": {"200": 10, "529": 10},
//	  "tries": 42,                    // tries sent, retries included
//	  "retries": 22,                  // tries - sent
//	  "timed_out": 0,                 // ended by the deadline: by_status["deadline"]
//	  "gave_up": 10,                  // ended refused: no try left, or none fitting the deadline
//	  "interrupted": false,           // the caller's context ended the run early
//	  "duration_seconds": 1.5,        // wall time, first send to last answer
//	  "requests_per_second": 6.7,     // ok / duration_seconds
//	  "goodput_per_second": 6.7,      // ok within the deadline / duration_seconds
//	  "output_tokens": 640,           // of successful requests
//	  "prompt_tokens": 1280,          // of successful requests, from usage
//	  "output_tokens_per_second": 427,
//	  "ttft_seconds": {"count":…, "mean":…, "p50":…, "p90":…, "p99":…, "min":…, "max":…},
//	  "itl_seconds": {…},
//	  "e2e_seconds": {…},
//	  "max_concurrency_observed": 4   // most requests in flight at once
//	}
//
// by_status keys are HTTP statuses ("200", "529", …), gRPC code names
// ("OK", "RESOURCE_EXHAUSTED", …) or error, timeout, cancelled,
// stream_error, bad_response, deadline: each request once, with its last
// try's outcome. Latencies are in seconds, from successful requests only,
// counted from the request's first try; percentiles are nearest-rank (see
// Percentile).
type Report struct {
	Version                int              `json:"version"`
	Config                 RunConfig        `json:"config"`
	Sent                   int64            `json:"sent"`
	OK                     int64            `json:"ok"`
	OKFirstTry             int64            `json:"ok_first_try"`
	Dropped                int64            `json:"dropped"`
	ByStatus               map[string]int64 `json:"by_status"`
	Tries                  int64            `json:"tries"`
	Retries                int64            `json:"retries"`
	TimedOut               int64            `json:"timed_out"`
	GaveUp                 int64            `json:"gave_up"`
	Interrupted            bool             `json:"interrupted"`
	DurationSeconds        float64          `json:"duration_seconds"`
	RequestsPerSecond      float64          `json:"requests_per_second"`
	GoodputPerSecond       float64          `json:"goodput_per_second"`
	OutputTokens           int64            `json:"output_tokens"`
	PromptTokens           int64            `json:"prompt_tokens"`
	OutputTokensPerSecond  float64          `json:"output_tokens_per_second"`
	TTFT                   Summary          `json:"ttft_seconds"`
	ITL                    Summary          `json:"itl_seconds"`
	E2E                    Summary          `json:"e2e_seconds"`
	MaxConcurrencyObserved int64            `json:"max_concurrency_observed"`
}

// RunConfig echoes the options of the run, for the record.
type RunConfig struct {
	Mode                Mode    `json:"mode"`
	Concurrency         int     `json:"concurrency"`     // closed loop; 0 in open
	Rate                float64 `json:"rate"`            // open loop; 0 in closed
	MaxOutstanding      int     `json:"max_outstanding"` // open loop; 0 in closed
	Requests            int64   `json:"requests"`        // 0: no count
	DurationSeconds     float64 `json:"duration_seconds"`
	DrainTimeoutSeconds float64 `json:"drain_timeout_seconds"`
	Retry               int     `json:"retry"`            // most tries per request
	DeadlineSeconds     float64 `json:"deadline_seconds"` // 0: none
	Target              string  `json:"target"`
	Model               string  `json:"model"` // "" with a Sender that has none
	Stream              bool    `json:"stream"`
	PromptTokens        string  `json:"prompt_tokens"`
	MaxTokens           string  `json:"max_tokens"`
	Seed                uint64  `json:"seed"`
}

// report turns a finished run's recorder into its Report.
func (g *Generator) report(rec *recorder, elapsed time.Duration, interrupted bool) Report {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r := Report{
		Version:                ReportVersion,
		Config:                 g.runConfig(),
		Sent:                   rec.sent.Load(),
		OK:                     rec.ok.Load(),
		OKFirstTry:             rec.okFirstTry.Load(),
		Dropped:                rec.dropped.Load(),
		ByStatus:               rec.byStatus,
		Tries:                  rec.tries.Load(),
		TimedOut:               rec.timedOut.Load(),
		GaveUp:                 rec.gaveUp.Load(),
		Interrupted:            interrupted,
		DurationSeconds:        elapsed.Seconds(),
		OutputTokens:           rec.outputTokens.Load(),
		PromptTokens:           rec.promptTokens,
		TTFT:                   Summarize(rec.ttft),
		ITL:                    Summarize(rec.itl),
		E2E:                    Summarize(rec.e2e),
		MaxConcurrencyObserved: rec.maxInFlight.Load(),
	}
	r.Retries = r.Tries - r.Sent
	if s := elapsed.Seconds(); s > 0 {
		r.RequestsPerSecond = float64(r.OK) / s
		r.GoodputPerSecond = float64(rec.good.Load()) / s
		r.OutputTokensPerSecond = float64(r.OutputTokens) / s
	}
	return r
}

func (g *Generator) runConfig() RunConfig {
	o := &g.opts
	c := RunConfig{
		Mode: o.Mode, Requests: o.Requests,
		DurationSeconds: o.Duration.Seconds(), DrainTimeoutSeconds: o.DrainTimeout.Seconds(),
		Retry: o.Retry, DeadlineSeconds: o.Deadline.Seconds(),
		Target: g.Target(), Model: o.Model, Stream: o.Stream,
		PromptTokens: o.PromptTokens.String(), MaxTokens: o.MaxTokens.String(), Seed: o.Seed,
	}
	if o.Mode == Open {
		c.Rate, c.MaxOutstanding = o.Rate, o.MaxOutstanding
	} else {
		c.Concurrency = o.Concurrency
	}
	return c
}

// WriteJSON writes r as indented JSON and a newline.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
