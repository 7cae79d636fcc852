package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// refusalStatuses are the answers a client retries and, when its every
// try got one, gives up on: slotgate's 529, and 503 and 429.
var refusalStatuses = []string{"529", "503", "429"}

// runFigures are one run's results, as its clients saw them and as its
// engine reported them.
type runFigures struct {
	Sent   int64 `json:"sent"`
	Served int64 `json:"served"`
	// ServedFirstTry is of Served, those served at their first try.
	ServedFirstTry int64 `json:"served_first_try"`
	Refused        int64 `json:"refused"`
	TimedOut       int64 `json:"timed_out"`
	Other          int64 `json:"other"`
	// Client200, StatusSum, GaveUp and TimedOutField are the same figures
	// read another way, for check.
	Client200     int64   `json:"client_200"`
	StatusSum     int64   `json:"by_status_sum"`
	GaveUp        int64   `json:"gave_up"`
	TimedOutField int64   `json:"timed_out_reported"`
	Tries         int64   `json:"tries"`
	Retries       int64   `json:"retries"`
	TTFTP50       float64 `json:"ttft_p50_seconds"`
	TTFTP99       float64 `json:"ttft_p99_seconds"`
	Goodput       float64 `json:"goodput_per_second"`
	// EnginePeakWaiting is the engine's vllm:num_requests_waiting at its
	// highest, as sampled; EnginePeakBeforeFirstToken is enginesim's own
	// exact peak of requests before their first token.
	EnginePeakWaiting          float64 `json:"engine_peak_waiting"`
	EnginePeakBeforeFirstToken float64 `json:"engine_peak_before_first_token"`
}

func newRunFigures(r loadReport, e engineSample, peakWaiting float64) runFigures {
	f := runFigures{
		Sent: r.Sent, Served: r.OK, ServedFirstTry: r.OKFirstTry, TimedOut: r.ByStatus["deadline"],
		Client200: r.ByStatus["200"], GaveUp: r.GaveUp, TimedOutField: r.TimedOut,
		Tries: r.Tries, Retries: r.Retries,
		TTFTP50: r.TTFT.P50, TTFTP99: r.TTFT.P99, Goodput: r.GoodputPerSecond,
		EnginePeakWaiting: peakWaiting, EnginePeakBeforeFirstToken: e.peakBeforeFirstToken,
	}
	for status, n := range r.ByStatus {
		f.StatusSum += n
		switch {
		case status == "200", status == "deadline":
		case isRefusal(status):
			f.Refused += n
		default:
			f.Other += n
		}
	}
	return f
}

func isRefusal(status string) bool {
	for _, s := range refusalStatuses {
		if status == s {
			return true
		}
	}
	return false
}

// comparison is compare mode's result: the same burst without and with
// slotgate, printed as one table and optionally written as JSON.
type comparison struct {
	Mode            string     `json:"mode"`
	N               int        `json:"n"`
	W               int        `json:"w"`
	Q               int        `json:"q"`
	Rate            float64    `json:"rate"`
	DurationSeconds float64    `json:"duration_seconds"`
	Retry           int        `json:"retry"`
	DeadlineSeconds float64    `json:"deadline_seconds"`
	Without         runFigures `json:"without_slotgate"`
	With            runFigures `json:"with_slotgate"`
	// The dynamo_* gauges' highest values as sampled during the burst, and
	// the rejection counter at its end, from slotgate's admin /metrics.
	MaxEngineRequest float64 `json:"max_dynamo_engine_request"`
	MaxRequestQueue  float64 `json:"max_dynamo_request_queue"`
	MaxWaiting       float64 `json:"max_dynamo_backend_admission_engine_wait_count"`
	RejectionTotal   float64 `json:"dynamo_rejection_request_total"`
	// Probes are the demo's own requests sent while the queue was full;
	// ProbeRefused tells whether one got the overload answer, described by
	// the other Probe fields.
	Probes            int     `json:"probes"`
	ProbeRefused      bool    `json:"probe_refused"`
	ProbeStatus       int     `json:"probe_status"`
	ProbeRetryAfter   string  `json:"probe_retry_after"`
	ProbeLatencyMilli float64 `json:"probe_latency_ms"`
}

func newComparison(o options, r [2]loadReport, v *compareView, final sample, engines [2]engineSample) comparison {
	return comparison{
		Mode: modeCompare, N: o.slots, W: o.waiting, Q: o.queue, Rate: o.rate,
		DurationSeconds: o.duration.Seconds(), Retry: o.retry, DeadlineSeconds: o.deadline.Seconds(),
		Without:          newRunFigures(r[0], engines[0], v.peakAloneWaiting),
		With:             newRunFigures(r[1], engines[1], v.peakBehindWaiting),
		MaxEngineRequest: v.maxEngine, MaxRequestQueue: v.maxQueue, MaxWaiting: v.maxWaiting,
		RejectionTotal: final.rejected,
		Probes:         v.probe.sent, ProbeRefused: v.probe.refused, ProbeStatus: v.probe.status,
		ProbeRetryAfter: v.probe.retryAfter, ProbeLatencyMilli: float64(v.probe.latency.Microseconds()) / 1000,
	}
}

func (c comparison) print(out io.Writer) {
	w := ""
	if c.W > 0 {
		w = fmt.Sprintf(", W=%d", c.W)
	}
	fmt.Fprintf(out, "\nSummary: the same burst (%g/s for %gs), clients with %d tries and a %gs deadline\n\n",
		c.Rate, c.DurationSeconds, c.Retry, c.DeadlineSeconds)
	row := func(label string, value func(f runFigures) string, note string) {
		fmt.Fprintf(out, "  %-34s %-18s %-18s %s\n", label, value(c.Without), value(c.With), note)
	}
	fmt.Fprintf(out, "  %-34s %-18s %-18s\n", "", "without slotgate", fmt.Sprintf("with (N=%d%s, Q=%d)", c.N, w, c.Q))
	count := func(get func(f runFigures) int64) func(f runFigures) string {
		return func(f runFigures) string { return fmt.Sprint(get(f)) }
	}
	row("requests sent", count(func(f runFigures) int64 { return f.Sent }), "each counted once, with its final outcome")
	row("served", count(func(f runFigures) int64 { return f.Served }), "complete answers")
	row("  of which at their first try", count(func(f runFigures) int64 { return f.ServedFirstTry }),
		"the others after Retry-After: TTFT p50 lands among these or those")
	row(fmt.Sprintf("refused (all %d tries)", c.Retry), count(func(f runFigures) int64 { return f.Refused }), c.refusalNote())
	row(fmt.Sprintf("timed out at the %gs deadline", c.DeadlineSeconds), count(func(f runFigures) int64 { return f.TimedOut }), "cancelled by the client")
	row("other answers", count(func(f runFigures) int64 { return f.Other }), "errors")
	row("TTFT p50 / p99", func(f runFigures) string { return fmt.Sprintf("%s / %s", secs(f.TTFTP50), secs(f.TTFTP99)) },
		"served requests, from the first try: Retry-After waits included")
	row("goodput", func(f runFigures) string { return fmt.Sprintf("%.1f/s", f.Goodput) }, "served within the deadline, per second")
	row("tries (retries)", func(f runFigures) string { return fmt.Sprintf("%d (%d)", f.Tries, f.Retries) }, "")
	row("engine's waiting queue, peak", func(f runFigures) string { return fmt.Sprintf("%.0f", f.EnginePeakWaiting) },
		"vllm:num_requests_waiting")
	row("engine's prefill, peak", func(f runFigures) string { return fmt.Sprintf("%.0f", f.EnginePeakBeforeFirstToken) },
		"requests before their first token")
	fmt.Fprintf(out, "\nslotgate's metrics, as Prometheus reads them:\n")
	metric := func(name, value, note string) { fmt.Fprintf(out, "  %-44s %-8s %s\n", name, value, note) }
	metric("dynamo_engine_request", fmt.Sprintf("max %.0f", c.MaxEngineRequest), fmt.Sprintf("during the burst (N = %d)", c.N))
	if c.W > 0 {
		metric("dynamo_backend_admission_engine_wait_count", fmt.Sprintf("max %.0f", c.MaxWaiting), fmt.Sprintf("before the first token (W = %d)", c.W))
	}
	metric("dynamo_request_queue", fmt.Sprintf("max %.0f", c.MaxRequestQueue), fmt.Sprintf("during the burst (Q = %d)", c.Q))
	metric("dynamo_rejection_request_total", fmt.Sprintf("%.0f", c.RejectionTotal), "every refused try, retries included")
}

// refusalNote says what a refused client got, from the probe.
func (c comparison) refusalNote() string {
	if !c.ProbeRefused {
		return "gave up, every try refused"
	}
	ra := "no Retry-After"
	if c.ProbeRetryAfter != "" {
		ra = "Retry-After: " + c.ProbeRetryAfter
	}
	return fmt.Sprintf("each try: %d with %s, in %.1f ms", c.ProbeStatus, ra, c.ProbeLatencyMilli)
}

// secs formats seconds with three significant figures or so.
func secs(s float64) string {
	if s >= 1 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.3f s", s)
}

// check verifies that each run adds up, that the client and slotgate
// agree, and that slotgate's limits held; the demo fails if not.
func (c comparison) check() error {
	var errs []error
	for _, run := range []struct {
		name string
		f    runFigures
	}{{"without slotgate", c.Without}, {"with slotgate", c.With}} {
		if err := run.f.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", run.name, err))
		}
	}
	if c.MaxEngineRequest > float64(c.N) || c.MaxRequestQueue > float64(c.Q) || (c.W > 0 && c.MaxWaiting > float64(c.W)) {
		errs = append(errs, fmt.Errorf("slots %v, queue %v or prefill %v above N=%d, Q=%d, W=%d",
			c.MaxEngineRequest, c.MaxRequestQueue, c.MaxWaiting, c.N, c.Q, c.W))
	}
	// Every request given up on was refused at least once, and every
	// refusal made a client retry or give up, unless it was the demo's
	// own probe; a retry may also follow a connection error, hence a range.
	low, high := float64(c.With.GaveUp), float64(c.With.Retries+c.With.GaveUp+int64(c.Probes))
	if c.RejectionTotal < low || c.RejectionTotal > high {
		errs = append(errs, fmt.Errorf("slotgate counted %v refusals; its clients gave up on %d, retried %d times, and %d probes were sent",
			c.RejectionTotal, c.With.GaveUp, c.With.Retries, c.Probes))
	}
	return errors.Join(errs...)
}

// check verifies that one run's figures add up, each read two ways.
func (f runFigures) check() error {
	var problems []string
	if f.Served+f.Refused+f.TimedOut+f.Other != f.Sent {
		problems = append(problems, fmt.Sprintf("served %d + refused %d + timed out %d + other %d != sent %d",
			f.Served, f.Refused, f.TimedOut, f.Other, f.Sent))
	}
	if f.StatusSum != f.Sent {
		problems = append(problems, fmt.Sprintf("by_status sums to %d, sent %d", f.StatusSum, f.Sent))
	}
	if f.Client200 != f.Served {
		problems = append(problems, fmt.Sprintf("%d answers of 200, %d served", f.Client200, f.Served))
	}
	if f.GaveUp != f.Refused || f.TimedOutField != f.TimedOut {
		problems = append(problems, fmt.Sprintf("gave_up %d vs %d refused, timed_out %d vs %d by status deadline",
			f.GaveUp, f.Refused, f.TimedOutField, f.TimedOut))
	}
	if f.Tries != f.Sent+f.Retries {
		problems = append(problems, fmt.Sprintf("tries %d != sent %d + retries %d", f.Tries, f.Sent, f.Retries))
	}
	if f.ServedFirstTry > f.Served || f.Served-f.ServedFirstTry > f.Retries {
		problems = append(problems, fmt.Sprintf("%d served at their first try, of %d served after %d retries",
			f.ServedFirstTry, f.Served, f.Retries))
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}
