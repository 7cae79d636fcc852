package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteTable writes r for people: one "name  value" row per figure, a
// "status S  N" row per outcome (HTTP statuses in numeric order, then the
// others, gRPC codes among them, by name), and a table of latencies in milliseconds.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	c := r.Config
	row("target", "%s", c.Target)
	model := c.Model
	if model == "" {
		model = "none"
	}
	row("model", "%s (%s)", model, map[bool]string{true: "stream", false: "no stream"}[c.Stream])
	row("load", "%s", loadText(c))
	row("lengths", "prompt %s tokens, max_tokens %s", c.PromptTokens, c.MaxTokens)
	row("duration", "%.3f s", r.DurationSeconds)
	if r.Interrupted {
		row("interrupted", "yes: stopped before its bounds were reached")
	}
	row("sent", "%d", r.Sent)
	row("ok", "%d", r.OK)
	row("ok at first try", "%d", r.OKFirstTry)
	row("dropped", "%d", r.Dropped)
	row("max in flight", "%d", r.MaxConcurrencyObserved)
	for _, s := range statusOrder(r.ByStatus) {
		row("status "+s, "%d", r.ByStatus[s])
	}
	row("tries", "%d", r.Tries)
	row("retries", "%d", r.Retries)
	row("timed out", "%d (deadline %s)", r.TimedOut, deadlineText(c.DeadlineSeconds))
	row("gave up", "%d (every try refused)", r.GaveUp)
	row("requests/s", "%.2f (successful)", r.RequestsPerSecond)
	row("goodput/s", "%.2f (successful within the deadline)", r.GoodputPerSecond)
	row("output tokens/s", "%.1f", r.OutputTokensPerSecond)
	row("output tokens", "%d", r.OutputTokens)
	row("prompt tokens", "%d", r.PromptTokens)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "latency (ms)\tcount\tmean\tp50\tp90\tp99\tmin\tmax")
	for _, l := range []struct {
		name string
		s    Summary
	}{{"TTFT", r.TTFT}, {"ITL", r.ITL}, {"E2E", r.E2E}} {
		ms := func(sec float64) string { return strconv.FormatFloat(sec*1000, 'f', 2, 64) }
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.name, l.s.Count,
			ms(l.s.Mean), ms(l.s.P50), ms(l.s.P90), ms(l.s.P99), ms(l.s.Min), ms(l.s.Max))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// loadText describes the load shape and its bounds.
func loadText(c RunConfig) string {
	s := fmt.Sprintf("closed loop, concurrency %d", c.Concurrency)
	if c.Mode == Open {
		s = fmt.Sprintf("open loop, %g req/s Poisson (seed %d), max outstanding %d", c.Rate, c.Seed, c.MaxOutstanding)
	}
	if c.Requests > 0 {
		s += fmt.Sprintf(", %d requests", c.Requests)
	}
	if c.DurationSeconds > 0 {
		s += fmt.Sprintf(", for %v", seconds(c.DurationSeconds))
	}
	if c.Retry > 1 {
		s += fmt.Sprintf(", at most %d tries a request", c.Retry)
	}
	return s
}

// deadlineText is the deadline for people: a duration, or "none".
func deadlineText(sec float64) string {
	if sec <= 0 {
		return "none"
	}
	return seconds(sec).String()
}

// seconds is sec as a Duration.
func seconds(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }

// statusOrder lists the outcomes: HTTP statuses in numeric order, then the
// named outcomes in alphabetical order.
func statusOrder(by map[string]int64) []string {
	return slices.SortedFunc(maps.Keys(by), func(a, b string) int {
		na, errA := strconv.Atoi(a)
		nb, errB := strconv.Atoi(b)
		switch {
		case errA == nil && errB == nil:
			return cmp.Compare(na, nb)
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return cmp.Compare(a, b)
	})
}
