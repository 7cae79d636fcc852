package command

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/load/report"
)

// TestORCAReportForm: the request's endpoint-load-metrics-format picks the
// form, in any case; without it the default form is sent with
// --orca-header and nothing without; an unknown form gets the default.
func TestORCAReportForm(t *testing.T) {
	lp := &loadParts{orcaGRPC: orcagrpc.NewReporter(orcagrpc.Options{}), orcaFormat: orcaFormat("json")}
	lp.orcaGRPC.Update(&report.Snapshot{Requests: report.Requests{InFlight: 1, Limit: 4}, Ranks: []report.Rank{{}}})
	for _, tc := range []struct {
		name   string
		on     bool
		asked  []string
		prefix string // "" for no report
	}{
		{name: "off, not asked", on: false},
		{name: "off, asked text", on: false, asked: []string{"TEXT"}, prefix: "TEXT "},
		{name: "off, asked bin in lower case", on: false, asked: []string{"bin"}, prefix: "BIN "},
		{name: "on, not asked: the default", on: true, prefix: "JSON "},
		{name: "on, asked text", on: true, asked: []string{"text"}, prefix: "TEXT "},
		{name: "on, asked an unknown form: the default", on: true, asked: []string{"PROTO"}, prefix: "JSON "},
		{name: "off, asked an unknown form: the default", on: false, asked: []string{"yaml"}, prefix: "JSON "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lp.orcaOn = tc.on
			req := http.Header{}
			if tc.asked != nil {
				req["Endpoint-Load-Metrics-Format"] = tc.asked
			}
			got := lp.orcaReport(req)
			if (tc.prefix == "") != (got == "") || !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("report %q, want prefix %q", got, tc.prefix)
			}
		})
	}
}
