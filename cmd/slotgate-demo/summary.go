package main

import (
	"errors"
	"fmt"
	"io"
)

// summary is hammer mode's result, printed and optionally written as JSON.
type summary struct {
	N, Q             int
	Sent             int     `json:"sent"`
	ServedDirect     int     `json:"served_direct"`
	ServedQueued     int     `json:"served_from_queue"`
	Rejected529      int     `json:"rejected_529"`
	OtherStatuses    int     `json:"other_statuses"`
	ClientOK         int     `json:"client_200"`
	TTFTP50          float64 `json:"ttft_p50_seconds"`
	TTFTP99          float64 `json:"ttft_p99_seconds"`
	MaxEngineRequest float64 `json:"max_dynamo_engine_request"`
	MaxRequestQueue  float64 `json:"max_dynamo_request_queue"`
	RejectionTotal   float64 `json:"dynamo_rejection_request_total"`
}

func newSummary(o options, r loadReport, w *watcher, final sample) summary {
	s := summary{
		N: o.slots, Q: o.queue, Sent: int(r.Sent),
		ServedDirect: int(final.direct), ServedQueued: int(final.queued),
		Rejected529: int(r.ByStatus["529"]), ClientOK: int(r.ByStatus["200"]),
		TTFTP50: r.TTFT.P50, TTFTP99: r.TTFT.P99,
		MaxEngineRequest: w.maxEngine, MaxRequestQueue: w.maxQueue, RejectionTotal: final.rejected,
	}
	for status, n := range r.ByStatus {
		if status != "200" && status != "529" {
			s.OtherStatuses += int(n)
		}
	}
	return s
}

func (s summary) print(out io.Writer) {
	fmt.Fprintf(out, "\nSummary (N=%d engine slots, Q=%d queue places)\n", s.N, s.Q)
	rows := []struct{ label, value, note string }{
		{"requests sent", fmt.Sprint(s.Sent), "by the load generator"},
		{"served directly", fmt.Sprint(s.ServedDirect), `slotgate_requests_total{outcome="admitted_direct"}`},
		{"served from the queue", fmt.Sprint(s.ServedQueued), `slotgate_requests_total{outcome="admitted_queued"}`},
		{"rejected with 529", fmt.Sprint(s.Rejected529), "at once, never reaching the engine"},
		{"other answers", fmt.Sprint(s.OtherStatuses), "errors, cancelled at the end of the run"},
		{"TTFT p50 / p99", fmt.Sprintf("%.3f s / %.3f s", s.TTFTP50, s.TTFTP99), "served requests, queue wait included"},
		{"dynamo_engine_request", fmt.Sprintf("max %.0f", s.MaxEngineRequest), fmt.Sprintf("during the burst (N = %d)", s.N)},
		{"dynamo_request_queue", fmt.Sprintf("max %.0f", s.MaxRequestQueue), fmt.Sprintf("during the burst (Q = %d)", s.Q)},
		{"dynamo_rejection_request_total", fmt.Sprintf("%.0f", s.RejectionTotal), "as Prometheus reads it"},
	}
	for _, r := range rows {
		fmt.Fprintf(out, "  %-31s %-18s %s\n", r.label, r.value, r.note)
	}
}

// check verifies that the figures add up; the demo fails if they do not.
func (s summary) check() error {
	var errs []error
	if s.ServedDirect+s.ServedQueued+s.Rejected529+s.OtherStatuses != s.Sent {
		errs = append(errs, fmt.Errorf("served %d + %d, rejected %d and other %d do not add up to %d sent",
			s.ServedDirect, s.ServedQueued, s.Rejected529, s.OtherStatuses, s.Sent))
	}
	if s.MaxEngineRequest > float64(s.N) || s.MaxRequestQueue > float64(s.Q) {
		errs = append(errs, fmt.Errorf("slots %v or queue %v above N=%d, Q=%d", s.MaxEngineRequest, s.MaxRequestQueue, s.N, s.Q))
	}
	if s.ClientOK != s.ServedDirect+s.ServedQueued {
		errs = append(errs, fmt.Errorf("the client saw %d answers of 200, slotgate served %d", s.ClientOK, s.ServedDirect+s.ServedQueued))
	}
	if float64(s.Rejected529) != s.RejectionTotal {
		errs = append(errs, fmt.Errorf("the client saw %d 529s, slotgate counted %v", s.Rejected529, s.RejectionTotal))
	}
	return errors.Join(errs...)
}
