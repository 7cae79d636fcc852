package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A without-slotgate run: nothing refused, some requests ended by the
// deadline. A with-slotgate run: some refused on every try, none timed out.
const (
	reportWithout = `{"version":1,"sent":10,"ok":7,"ok_first_try":7,"by_status":{"200":7,"deadline":3},"tries":10,"retries":0,
		"timed_out":3,"gave_up":0,"goodput_per_second":0.7,"ttft_seconds":{"p50":4,"p99":9}}`
	reportWith = `{"version":1,"sent":10,"ok":6,"ok_first_try":2,"by_status":{"200":6,"529":3,"error":1},"tries":19,"retries":9,
		"timed_out":0,"gave_up":3,"goodput_per_second":0.9,"ttft_seconds":{"p50":0.1,"p99":2.1}}`
)

func mustDecode(t *testing.T, s string) loadReport {
	t.Helper()
	r, err := decodeLoadReport([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testComparison(t *testing.T) comparison {
	o := options{slots: 8, waiting: 4, queue: 4, rate: 28, retry: 3, deadline: 10 * time.Second, duration: 15 * time.Second}
	v := &compareView{peakAloneWaiting: 120, peakBehindWaiting: 1, maxEngine: 8, maxQueue: 4, maxWaiting: 4,
		probe: &refusalProbe{sent: 1, refused: true, status: 529, retryAfter: "1", latency: 800 * time.Microsecond}}
	reports := [2]loadReport{mustDecode(t, reportWithout), mustDecode(t, reportWith)}
	engines := [2]engineSample{{peakBeforeFirstToken: 128}, {peakBeforeFirstToken: 4}}
	// 9 retries + 3 given up + 1 probe: at most 13 refusals.
	return newComparison(o, reports, v, sample{rejected: 12}, engines)
}

func TestComparisonAddsUp(t *testing.T) {
	c := testComparison(t)
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	if c.Without.Served != 7 || c.Without.TimedOut != 3 || c.With.Refused != 3 || c.With.Other != 1 {
		t.Errorf("figures %+v, %+v", c.Without, c.With)
	}
	var out bytes.Buffer
	c.print(&out)
	if c.Without.ServedFirstTry != 7 || c.With.ServedFirstTry != 2 {
		t.Errorf("served at the first try %d and %d, want 7 and 2", c.Without.ServedFirstTry, c.With.ServedFirstTry)
	}
	for _, want := range []string{"with (N=8, W=4, Q=4)", "timed out at the 10s deadline", "4.0 s / 9.0 s", "0.100 s / 2.1 s",
		"of which at their first try      7                  2 ",
		"529 with Retry-After: 1, in 0.8 ms", "dynamo_backend_admission_engine_wait_count", "dynamo_rejection_request_total"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestComparisonCheckFails(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(c *comparison)
		want  string
	}{
		{"a request lost", func(c *comparison) { c.With.Sent++ }, "!= sent"},
		{"client and slotgate disagree", func(c *comparison) { c.RejectionTotal = 20 }, "slotgate counted 20 refusals"},
		{"fewer refusals than give-ups", func(c *comparison) { c.RejectionTotal = 2 }, "slotgate counted 2 refusals"},
		{"queue above Q", func(c *comparison) { c.MaxRequestQueue = 5 }, "above N=8, Q=4, W=4"},
		{"prefill above W", func(c *comparison) { c.MaxWaiting = 5 }, "above N=8, Q=4, W=4"},
		{"gave_up disagrees with by_status", func(c *comparison) { c.With.GaveUp = 2 }, "gave_up 2 vs 3 refused"},
		{"tries disagree", func(c *comparison) { c.Without.Tries = 11 }, "tries 11"},
		{"more served at the first try than served", func(c *comparison) { c.With.ServedFirstTry = 7 }, "7 served at their first try, of 6"},
		{"more retried successes than retries", func(c *comparison) { c.With.ServedFirstTry, c.With.Retries, c.With.Tries = 0, 5, 15 },
			"0 served at their first try, of 6 served after 5 retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testComparison(t)
			tt.spoil(&c)
			err := c.check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("check() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestDecodeLoadReportRefusesOtherVersions(t *testing.T) {
	for _, in := range []string{`{"version":2}`, `{}`, `not json`} {
		if _, err := decodeLoadReport([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// FuzzDecodeLoadReport checks that any report decodes without panicking
// and that newRunFigures puts every by_status entry in exactly one class.
func FuzzDecodeLoadReport(f *testing.F) {
	f.Add([]byte(reportWithout))
	f.Add([]byte(reportWith))
	f.Add([]byte(`{"version":1,"by_status":{"429":1,"503":2,"timeout":3}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeLoadReport(b)
		if err != nil {
			return
		}
		fig := newRunFigures(r, engineSample{}, 0)
		if fig.Client200+fig.Refused+fig.TimedOut+fig.Other != fig.StatusSum {
			t.Errorf("by_status %v split into 200 %d, refused %d, timed out %d, other %d: not %d",
				r.ByStatus, fig.Client200, fig.Refused, fig.TimedOut, fig.Other, fig.StatusSum)
		}
	})
}
