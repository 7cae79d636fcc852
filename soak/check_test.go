package soak_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/slotgate/slotgate/soak"
)

// served is an HTTP request that was answered in full.
func served(id string) soak.Attempt {
	return soak.Attempt{ID: id, Protocol: soak.HTTP, Wrote: true, Status: 200, Complete: true}
}

func line(id string, status int, outcome string) soak.LogEntry {
	return soak.LogEntry{ID: id, Status: status, Outcome: outcome}
}

func TestCheck(t *testing.T) {
	refused := soak.Attempt{ID: "r", Protocol: soak.HTTP, Wrote: true, Status: 529, Reason: "capacity"}
	left := soak.Attempt{ID: "l", Protocol: soak.HTTP, Wrote: true, Aborted: true}
	unwritten := soak.Attempt{ID: "u", Protocol: soak.HTTP, Aborted: true}
	grpcCall := soak.Attempt{ID: "g", Protocol: soak.GRPC, Answered: true, Code: codes.OK, Complete: true}
	for _, tc := range []struct {
		name     string
		attempts []soak.Attempt
		entries  []soak.LogEntry
		want     []string // invariant: substring, one per violation; none for a clean input
	}{
		{"consistent", []soak.Attempt{served("a"), refused, left, unwritten, grpcCall},
			[]soak.LogEntry{line("a", 200, "admitted_queued"), line("r", 529, "rejected_capacity"), line("l", 499, "cancelled_queued")}, nil},
		{"unwritten request logged once is fine", []soak.Attempt{unwritten},
			[]soak.LogEntry{line("u", 499, "cancelled_queued")}, nil},
		{"missing line", []soak.Attempt{served("a")}, nil, []string{"logged-once: request a has no access-log line"}},
		{"missing line of a refused request", []soak.Attempt{refused}, nil, []string{"logged-once: request r has no access-log line"}},
		{"a client that left before any answer may leave no line", []soak.Attempt{left}, nil, nil},
		{"two lines", []soak.Attempt{served("a")},
			[]soak.LogEntry{line("a", 200, "admitted_direct"), line("a", 200, "admitted_direct")},
			[]string{"logged-once: request a has 2 access-log lines"}},
		{"line nobody sent", []soak.Attempt{served("a")},
			[]soak.LogEntry{line("a", 200, "admitted_direct"), line("x", 200, "admitted_direct")},
			[]string{`logged-once: access-log line for request id "x"`}},
		{"status differs", []soak.Attempt{served("a")},
			[]soak.LogEntry{line("a", 500, "admitted_direct")}, []string{"log-agrees: request a", "the status differs"}},
		{"529 logged as served", []soak.Attempt{refused},
			[]soak.LogEntry{line("r", 529, "admitted_direct")}, []string{"529 goes with rejected_capacity"}},
		{"rejected_capacity with another status", []soak.Attempt{{ID: "b", Protocol: soak.HTTP, Wrote: true, Aborted: true}},
			[]soak.LogEntry{line("b", 503, "rejected_capacity")}, []string{"529 goes with rejected_capacity"}},
		{"cancelled but the client stayed", []soak.Attempt{{ID: "s", Protocol: soak.HTTP, Wrote: true, Status: 200, Err: "unexpected EOF"}},
			[]soak.LogEntry{line("s", 200, "cancelled_running")}, []string{"the client did not leave"}},
		{"whole answer but not admitted", []soak.Attempt{served("a")},
			[]soak.LogEntry{line("a", 200, "engine_error")}, []string{"only an admitted request has"}},
		{"no answer to a client that stayed", []soak.Attempt{{ID: "n", Protocol: soak.HTTP, Wrote: true, Err: "EOF"}},
			[]soak.LogEntry{line("n", 502, "engine_error")}, []string{"answered: request n"}},
		{"gRPC not logged is not checked", []soak.Attempt{grpcCall}, nil, nil},
		{"gRPC logged twice once the log has gRPC lines", []soak.Attempt{grpcCall},
			[]soak.LogEntry{line("g", 200, "admitted_direct"), line("g", 200, "admitted_direct")},
			[]string{"logged-once: request g has 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := soak.Check(tc.attempts, tc.entries)
			matchViolations(t, got, tc.want)
		})
	}
}

// matchViolations checks that got has one violation per want, each
// containing its want.
func matchViolations(t *testing.T, got []soak.Violation, want []string) {
	t.Helper()
	var s []string
	for _, v := range got {
		s = append(s, v.String())
	}
	all := strings.Join(s, "\n")
	if len(want) == 0 && len(got) > 0 {
		t.Fatalf("violations on a clean input:\n%s", all)
	}
	if len(want) > 0 && len(got) != 1 && len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), all)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no violation contains %q; got:\n%s", w, all)
		}
	}
}

func TestCheckKeepsTheFirstOfMany(t *testing.T) {
	var attempts []soak.Attempt
	for i := range 100 {
		attempts = append(attempts, served(fmt.Sprint(i)))
	}
	got := soak.Check(attempts, nil)
	if len(got) != 21 || !strings.Contains(got[20].Detail, "and 80 more") {
		t.Fatalf("got %d violations, want 20 and a count of the other 80; last %v", len(got), got[len(got)-1])
	}
}

func TestCheckCounts(t *testing.T) {
	attempts := []soak.Attempt{served("a"), served("b"), {ID: "g", Protocol: soak.GRPC}}
	entries := []soak.LogEntry{line("a", 200, "admitted_direct"), line("b", 529, "rejected_capacity")}
	for _, tc := range []struct {
		name       string
		entries    []soak.LogEntry
		http, all  map[string]float64
		wantSubstr []string
	}{
		{"equal", entries, map[string]float64{"admitted_direct": 1, "rejected_capacity": 1, "engine_error": 0},
			map[string]float64{"admitted_direct": 5}, nil},
		{"metric counts one more", entries, map[string]float64{"admitted_direct": 2, "rejected_capacity": 1}, nil,
			[]string{"outcome admitted_direct: 1 access-log lines, slotgate_requests_total{protocol=\"http\"} 2"}},
		{"log has an outcome the metric lacks", entries, map[string]float64{"admitted_direct": 1}, nil,
			[]string{"outcome rejected_capacity: 1 access-log lines"}},
		{"gRPC lines compare with every protocol",
			append(entries, line("g", 200, "admitted_direct")),
			map[string]float64{"admitted_direct": 1, "rejected_capacity": 1},
			map[string]float64{"admitted_direct": 3, "rejected_capacity": 1},
			[]string{"outcome admitted_direct: 2 access-log lines, slotgate_requests_total{all protocols} 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			matchViolations(t, soak.CheckCounts(attempts, tc.entries, tc.http, tc.all), tc.wantSubstr)
		})
	}
}

func TestCheckGRPCCounts(t *testing.T) {
	attempts := []soak.Attempt{
		{ID: "1", Protocol: soak.GRPC, Answered: true, Code: codes.OK, Complete: true},
		{ID: "2", Protocol: soak.GRPC, Answered: true, Code: codes.ResourceExhausted, Reason: "capacity"},
		{ID: "3", Protocol: soak.GRPC, Aborted: true},
		served("h"), // HTTP: not counted here
	}
	for _, tc := range []struct {
		name   string
		metric map[string]float64
		want   []string
	}{
		{"within bounds", map[string]float64{"admitted_direct": 1, "rejected_capacity": 1, "cancelled_queued": 1}, nil},
		{"the abandoned call never arrived", map[string]float64{"admitted_queued": 1, "rejected_capacity": 1}, nil},
		{"more calls than sent", map[string]float64{"admitted_direct": 2, "rejected_capacity": 1, "cancelled_queued": 1},
			[]string{"4 gRPC calls counted, want 2 through 3"}},
		{"a refusal not counted", map[string]float64{"admitted_direct": 1, "engine_error": 1},
			[]string{"rejected_capacity 0, want 1 through 2"}},
		{"cancelled more than abandoned", map[string]float64{"rejected_capacity": 1, "cancelled_running": 2},
			[]string{"2 gRPC calls counted as cancelled, but clients abandoned 1", "0 gRPC calls counted as admitted, but 1 completed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			matchViolations(t, soak.CheckGRPCCounts(attempts, tc.metric), tc.want)
		})
	}
}
