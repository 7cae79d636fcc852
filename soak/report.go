package soak

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a soak did and found.
type Report struct {
	Duration time.Duration // the load phase's, warm-up included
	Requests int64         // requests sent, retries and the final burst included
	Retries  int64         // of them, retries after a 529 or 503
	// ByOutcome is slotgate_requests_total by outcome, every protocol.
	ByOutcome map[string]float64
	// ByClient is what clients saw, by a short name ("200 complete",
	// "529", "aborted", "grpc OK complete", ...).
	ByClient map[string]int64
	// Faults is enginesim's faults_injected by fault, summed over its
	// starts.
	Faults         map[string]float64
	EngineRestarts int
	LimitChanges   int
	FaultChanges   int

	N, MaxN          int // N at the start, and the largest N in force
	Q                int
	PeakEngine       int // enginesim's in_flight_max, the largest of its starts
	PeakBeforeFirst  int // enginesim's before_first_token_max, likewise
	PeakSlots        int // slotgate's dynamo_engine_request, as polled
	PeakQueue        int // slotgate's dynamo_request_queue, as polled
	PeakClientActive int
	// Baseline and final goroutines and open files of slotgate.
	Goroutines, GoroutinesEnd int
	FDs, FDsEnd               int
	Burst                     string // what the N+Q burst showed

	Violations []Violation
}

// OK reports whether no invariant was broken.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// RequestsPerSecond is requests sent per second of load.
func (r *Report) RequestsPerSecond() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Duration.Seconds()
}

// Write prints the report as aligned text.
func (r *Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("duration", "%s", r.Duration.Round(time.Millisecond))
	row("requests sent", "%d (%d of them retries)", r.Requests, r.Retries)
	row("requests per second", "%.0f", r.RequestsPerSecond())
	row("by outcome (slotgate)", "%s", joinCounts(r.ByOutcome))
	row("as clients saw them", "%s", joinInts(r.ByClient))
	row("faults injected", "%s", joinCounts(r.Faults))
	row("chaos", "%d limit changes, %d fault changes, %d engine restarts", r.LimitChanges, r.FaultChanges, r.EngineRestarts)
	row("peak engine concurrency", "%d (N %d at start, largest N in force %d)", r.PeakEngine, r.N, r.MaxN)
	row("peak before first token", "%d", r.PeakBeforeFirst)
	row("peak slots in use", "%d (polled)", r.PeakSlots)
	row("peak queue", "%d (Q %d, polled)", r.PeakQueue, r.Q)
	row("peak client-seen admitted", "%d (bound N+Q)", r.PeakClientActive)
	row("goroutines", "%d at baseline, %d at the end", r.Goroutines, r.GoroutinesEnd)
	row("open fds", "%d at baseline, %d at the end", r.FDs, r.FDsEnd)
	row("burst of N+Q", "%s", r.Burst)
	row("violations", "%d", len(r.Violations))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.Violations {
		if _, err := fmt.Fprintf(w, "  VIOLATION %s\n", v); err != nil {
			return err
		}
	}
	return nil
}

func joinCounts(m map[string]float64) string {
	keys := sortedKeys(m)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func joinInts(m map[string]int64) string {
	f := make(map[string]float64, len(m))
	for k, v := range m {
		f[k] = float64(v)
	}
	return joinCounts(f)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clientView is the short name of what a client saw, for ByClient.
func clientView(a *Attempt) string {
	switch {
	case a.Aborted:
		return a.Protocol.String() + " aborted"
	case a.Protocol == GRPC && a.Complete:
		return "grpc complete"
	case a.Protocol == GRPC && a.Answered:
		return "grpc " + a.Code.String()
	case a.Protocol == GRPC:
		return "grpc no answer"
	case a.Complete:
		return "http 200 complete"
	case a.Status == 0:
		return "http no answer"
	case a.Status == 200:
		return "http 200 broken"
	default:
		return fmt.Sprintf("http %d", a.Status)
	}
}
