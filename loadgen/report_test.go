package loadgen_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/loadgen"
)

// TestReportJSONMatchesTable: the JSON parses, has the documented keys,
// and says what the table says.
func TestReportJSONMatchesTable(t *testing.T) {
	checkLeaks(t)
	srv := (&engine{status: func(n int64) int { return []int{200, 529, 200, 503}[n%4] }}).start(t)
	o := options(srv.URL)
	o.Concurrency, o.Requests = 3, 16
	r := runLoad(t, t.Context(), o)

	var js, table bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(js.Bytes(), &generic); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, js.String())
	}
	wantKeys := []string{"by_status", "config", "dropped", "duration_seconds", "e2e_seconds", "gave_up",
		"goodput_per_second", "interrupted", "itl_seconds", "max_concurrency_observed", "ok", "ok_first_try", "output_tokens",
		"output_tokens_per_second", "prompt_tokens", "requests_per_second", "retries", "sent", "timed_out",
		"tries", "ttft_seconds", "version"}
	if got := slices.Sorted(maps.Keys(generic)); !slices.Equal(got, wantKeys) {
		t.Errorf("JSON keys = %q\nwant        %q", got, wantKeys)
	}
	ttft, _ := generic["ttft_seconds"].(map[string]any)
	if got := slices.Sorted(maps.Keys(ttft)); !slices.Equal(got, []string{"count", "max", "mean", "min", "p50", "p90", "p99"}) {
		t.Errorf("ttft_seconds keys = %q", got)
	}
	var back loadgen.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"200": 8, "503": 4, "529": 4}
	if !maps.Equal(back.ByStatus, want) || back.Sent != 16 || back.OK != 8 || back.Version != loadgen.ReportVersion {
		t.Errorf("JSON: sent %d, ok %d, by_status %v, version %d; want 16, 8, %v, %d",
			back.Sent, back.OK, back.ByStatus, back.Version, want, loadgen.ReportVersion)
	}

	rows := tableRows(t, table.String())
	checks := map[string]int64{"sent": back.Sent, "ok": back.OK, "ok at first try": back.OKFirstTry, "dropped": back.Dropped,
		"max in flight": back.MaxConcurrencyObserved, "output tokens": back.OutputTokens,
		"tries": back.Tries, "retries": back.Retries, "timed out": back.TimedOut, "gave up": back.GaveUp}
	for s, n := range back.ByStatus {
		checks["status "+s] = n
	}
	for name, n := range checks {
		if got, ok := rows[name]; !ok || got != strconv.FormatInt(n, 10) {
			t.Errorf("table row %q = %q, JSON says %d\n%s", name, got, n, table.String())
		}
	}
	for _, name := range []string{"TTFT", "ITL", "E2E"} {
		if _, ok := rows[name]; !ok {
			t.Errorf("table has no %s row:\n%s", name, table.String())
		}
	}
	if back.GaveUp != 8 || back.Tries != 16 || back.Config.Retry != 1 || back.Config.DeadlineSeconds != 0 {
		t.Errorf("JSON: gave_up %d, tries %d, config retry %d, deadline %g; want 8, 16, 1, 0",
			back.GaveUp, back.Tries, back.Config.Retry, back.Config.DeadlineSeconds)
	}
	if got, want := rows["goodput/s"], strconv.FormatFloat(back.GoodputPerSecond, 'f', 2, 64); got != want {
		t.Errorf("table goodput/s = %q, JSON says %s", got, want)
	}
	if rows["TTFT"] != strconv.Itoa(back.TTFT.Count) {
		t.Errorf("TTFT count in the table = %q, JSON %d", rows["TTFT"], back.TTFT.Count)
	}
}

// tableRows maps each row's name to its first figure: the row is the
// name, two spaces or more, then the figures.
func tableRows(t *testing.T, s string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	re := regexp.MustCompile(`^(\S.*?)\s{2,}(\S+)`)
	for _, line := range strings.Split(s, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("table has two %q rows:\n%s", m[1], s)
			}
			rows[m[1]] = m[2]
		}
	}
	return rows
}

func TestStatusOrder(t *testing.T) {
	r := loadgen.Report{ByStatus: map[string]int64{"error": 1, "529": 2, "cancelled": 3, "200": 4, "1000": 5, "99": 6}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "status "); ok {
			order = append(order, strings.Fields(rest)[0])
		}
	}
	if want := []string{"99", "200", "529", "1000", "cancelled", "error"}; !slices.Equal(order, want) {
		t.Errorf("status rows in order %q, want %q", order, want)
	}
}
