package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// The invariants a Violation names.
const (
	InvEngineConcurrency = "engine-concurrency" // enginesim's peak ≤ the largest N in force
	InvSlots             = "slot-bound"         // slotgate's in-use gauge ≤ the largest N in force
	InvQueue             = "queue-bound"        // slotgate's queue gauge ≤ Q
	InvClientConcurrency = "client-concurrency" // admitted, unfinished requests seen by clients ≤ N + Q
	InvLoggedOnce        = "logged-once"        // each request sent has one access-log line
	InvLogAgrees         = "log-agrees"         // its line agrees with what its client saw
	InvAnswered          = "answered"           // a client that stayed got an answer
	InvLogCounts         = "log-matches-metrics"
	InvGRPCCounts        = "grpc-matches-metrics"
	InvAdmission         = "admission-balance" // received = admitted + refused + cancelled
	InvDrained           = "gauges-zero"
	InvLeak              = "goroutines-fds"
	InvBurst             = "burst-n-plus-q"
	InvProcess           = "process" // data races, exits, failed admin calls
)

// Violation is one broken invariant, with what showed it.
type Violation struct {
	Invariant string
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// maxDetails bounds the violations kept per invariant: a systematic bug
// over a million requests would otherwise keep a million of them.
const maxDetails = 20

// violations collects violations from any goroutine, keeping the first
// maxDetails of each invariant and counting the rest.
type violations struct {
	mu    sync.Mutex
	kept  []Violation
	count map[string]int
}

func (vs *violations) add(invariant, format string, args ...any) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.count == nil {
		vs.count = map[string]int{}
	}
	vs.count[invariant]++
	if vs.count[invariant] <= maxDetails {
		vs.kept = append(vs.kept, Violation{invariant, fmt.Sprintf(format, args...)})
	}
}

func (vs *violations) addAll(list []Violation) {
	for _, v := range list {
		vs.add(v.Invariant, "%s", v.Detail)
	}
}

// list returns the kept violations, with one more per invariant saying
// how many were not kept.
func (vs *violations) list() []Violation {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	out := slices.Clone(vs.kept)
	names := make([]string, 0, len(vs.count))
	for name := range vs.count {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if n := vs.count[name]; n > maxDetails {
			out = append(out, Violation{name, fmt.Sprintf("... and %d more", n-maxDetails)})
		}
	}
	return out
}

// Protocol is the protocol an attempt used.
type Protocol uint8

// The protocols of the client mix.
const (
	HTTP Protocol = iota
	GRPC
)

func (p Protocol) String() string {
	if p == GRPC {
		return "grpc"
	}
	return "http"
}

// Attempt is what a client saw of one request it sent. Each retry is an
// attempt of its own, with its own request id.
type Attempt struct {
	ID       string
	Protocol Protocol
	// Wrote: the HTTP request was written in full, so slotgate read it
	// and must log it. Always false for gRPC.
	Wrote bool
	// Status is the HTTP status of the answer; 0 when none came.
	Status int
	// Answered: a gRPC status came from the server (Code is it).
	Answered bool
	Code     codes.Code
	// Reason is the answer's X-Slotgate-Reason (x-slotgate-reason).
	Reason string
	// Aborted: the client ended the request (its cancel or its deadline)
	// before the answer ended.
	Aborted bool
	// Complete: the answer was read to its end: a 200 with a whole body
	// (SSE up to [DONE]), or a gRPC stream with its complete message and OK.
	Complete bool
	// Err is the client's error, when it had one that was not its abort.
	Err string
}

func (a *Attempt) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s client saw", a.Protocol)
	switch {
	case a.Protocol == HTTP && a.Status > 0:
		fmt.Fprintf(&b, " status %d", a.Status)
	case a.Answered:
		fmt.Fprintf(&b, " %s", a.Code)
	default:
		b.WriteString(" no answer")
	}
	if a.Reason != "" {
		fmt.Fprintf(&b, " (reason %s)", a.Reason)
	}
	if a.Complete {
		b.WriteString(", complete")
	}
	if a.Aborted {
		b.WriteString(", aborted by the client")
	}
	if !a.Wrote && a.Protocol == HTTP {
		b.WriteString(", request not written in full")
	}
	if a.Err != "" {
		fmt.Fprintf(&b, ", error %q", a.Err)
	}
	return b.String()
}

// LogEntry is one line of slotgate's access log, the fields the checks
// read.
type LogEntry struct {
	ID      string `json:"request_id"`
	Status  int    `json:"status"`
	Outcome string `json:"outcome"`
}

func admitted(outcome string) bool {
	return outcome == "admitted_direct" || outcome == "admitted_queued"
}

func cancelled(outcome string) bool {
	return outcome == "cancelled_queued" || outcome == "cancelled_running"
}

// Check compares what the clients saw with slotgate's access log,
// request by request:
//
//   - every HTTP request written in full has exactly one line, and no
//     request has more than one; every line is of a request sent;
//   - a line's status is the status its client saw, when it saw one;
//   - 529 in the log if and only if the outcome is rejected_capacity;
//   - a cancelled outcome, or 499, only for a client that left;
//   - a client that read a whole answer has an admitted outcome;
//   - an HTTP client that stayed got an answer.
//
// gRPC calls are checked only when the log has lines for them.
func Check(attempts []Attempt, entries []LogEntry) []Violation {
	var vs violations
	byID := make(map[string]int, len(attempts)) // index into attempts
	for i := range attempts {
		byID[attempts[i].ID] = i
	}
	lines := make(map[string][]int, len(entries))
	grpcLogged := false
	for i := range entries {
		id := entries[i].ID
		j, ok := byID[id]
		if !ok {
			vs.add(InvLoggedOnce, "access-log line for request id %q, which no client sent: %+v", id, entries[i])
			continue
		}
		if attempts[j].Protocol == GRPC {
			grpcLogged = true
		}
		lines[id] = append(lines[id], i)
	}
	for i := range attempts {
		a := &attempts[i]
		if a.Protocol == HTTP && !a.Aborted && a.Status == 0 {
			vs.add(InvAnswered, "request %s: %s", a.ID, a.describe())
		}
		if a.Protocol == GRPC && !grpcLogged {
			continue
		}
		idx := lines[a.ID]
		switch {
		case len(idx) > 1:
			vs.add(InvLoggedOnce, "request %s has %d access-log lines (%s)", a.ID, len(idx), a.describe())
			continue
		case len(idx) == 0:
			// A client that left before any answer may have closed its
			// connection before slotgate read the request (seen once in
			// a 2-minute race-detector soak), so it may leave no line;
			// CheckCounts still holds every line against the metrics.
			if a.Wrote && !(a.Aborted && a.Status == 0) {
				vs.add(InvLoggedOnce, "request %s has no access-log line (%s)", a.ID, a.describe())
			}
			continue
		}
		checkLine(&vs, a, entries[idx[0]])
	}
	return vs.list()
}

// checkLine checks one request's access-log line against its client.
func checkLine(vs *violations, a *Attempt, e LogEntry) {
	bad := func(format string, args ...any) {
		vs.add(InvLogAgrees, "request %s, logged status %d outcome %s, %s: %s", a.ID, e.Status, e.Outcome,
			a.describe(), fmt.Sprintf(format, args...))
	}
	if a.Protocol == HTTP && a.Status > 0 && e.Status != a.Status {
		bad("the status differs")
	}
	if a.Protocol == HTTP && (e.Status == 529) != (e.Outcome == "rejected_capacity") {
		bad("529 goes with rejected_capacity and only with it")
	}
	if (cancelled(e.Outcome) || e.Status == 499) && !a.Aborted {
		bad("logged as the client leaving, but the client did not leave")
	}
	if a.Complete && !admitted(e.Outcome) {
		bad("the client read a whole answer, which only an admitted request has")
	}
}

// CheckCounts compares the access log's counts per outcome with
// slotgate_requests_total's: metricHTTP summed over the http series,
// metricAll over every protocol, used when the log has gRPC calls too.
func CheckCounts(attempts []Attempt, entries []LogEntry, metricHTTP, metricAll map[string]float64) []Violation {
	var vs violations
	grpcIDs := map[string]bool{}
	for i := range attempts {
		if attempts[i].Protocol == GRPC {
			grpcIDs[attempts[i].ID] = true
		}
	}
	logged, grpcLogged := map[string]float64{}, false
	for _, e := range entries {
		logged[e.Outcome]++
		grpcLogged = grpcLogged || grpcIDs[e.ID]
	}
	want, which := metricHTTP, `protocol="http"`
	if grpcLogged {
		want, which = metricAll, "all protocols"
	}
	for _, o := range unionKeys(logged, want) {
		if logged[o] != want[o] {
			vs.add(InvLogCounts, "outcome %s: %.0f access-log lines, slotgate_requests_total{%s} %.0f", o, logged[o], which, want[o])
		}
	}
	return vs.list()
}

// CheckGRPCCounts bounds slotgate_requests_total{protocol="grpc"} by what
// the gRPC clients saw; gRPC calls have no access-log line, and a call
// its client abandoned may or may not have reached slotgate, so these
// are bounds, not equalities.
func CheckGRPCCounts(attempts []Attempt, metric map[string]float64) []Violation {
	var vs violations
	var total, answered, capacity, aborted, complete float64
	for i := range attempts {
		a := &attempts[i]
		if a.Protocol != GRPC {
			continue
		}
		total++
		if a.Aborted {
			aborted++
			continue
		}
		if a.Answered || a.Complete {
			answered++
		}
		if a.Complete {
			complete++
		}
		if a.Answered && a.Code == codes.ResourceExhausted && a.Reason == "capacity" {
			capacity++
		}
	}
	var sum float64
	for _, v := range metric {
		sum += v
	}
	if sum > total || sum < answered {
		vs.add(InvGRPCCounts, "%.0f gRPC calls counted, want %.0f through %.0f (answered through sent)", sum, answered, total)
	}
	if c := metric["rejected_capacity"]; c < capacity || c > capacity+aborted {
		vs.add(InvGRPCCounts, "rejected_capacity %.0f, want %.0f through %.0f (refusals seen, plus calls abandoned)", c, capacity, capacity+aborted)
	}
	if c := metric["cancelled_queued"] + metric["cancelled_running"]; c > aborted {
		vs.add(InvGRPCCounts, "%.0f gRPC calls counted as cancelled, but clients abandoned %.0f", c, aborted)
	}
	if c := metric["admitted_direct"] + metric["admitted_queued"]; c < complete {
		vs.add(InvGRPCCounts, "%.0f gRPC calls counted as admitted, but %.0f completed", c, complete)
	}
	return vs.list()
}

func unionKeys(a, b map[string]float64) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// limitHistory records every N put in force, so that a bound can be the
// largest N in force over an interval: lowering N takes no held slot
// back, so until the excess drains the old N still bounds.
type limitHistory struct {
	mu      sync.Mutex
	changes []limitChange // in time order; the first is the start
}

type limitChange struct {
	at time.Time
	n  int
}

// record notes that n is in force from at on. Record a raise before the
// change is sent and a lowering after it is acknowledged, so that the
// history never understates the N in force.
func (h *limitHistory) record(at time.Time, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes, limitChange{at, n})
}

// maxSince returns the largest N in force at any moment from t on: the
// one in force at t and every later one.
func (h *limitHistory) maxSince(t time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	best := 0
	for i, c := range h.changes {
		next := i+1 < len(h.changes) && !h.changes[i+1].at.After(t)
		if !next { // c is in force at t or set after it
			best = max(best, c.n)
		}
	}
	return best
}

// largest returns the largest N ever in force.
func (h *limitHistory) largest() int { return h.maxSince(time.Time{}) }

// String lists the changes as "15:04:05.000=N", for violation details.
func (h *limitHistory) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	parts := make([]string, len(h.changes))
	for i, c := range h.changes {
		parts[i] = fmt.Sprintf("%s=%d", c.at.Format("15:04:05.000"), c.n)
	}
	return strings.Join(parts, " ")
}
