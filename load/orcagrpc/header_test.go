package orcagrpc_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/load/report"
)

// envoyParse reads an endpoint-load-metrics value by the rules of Envoy's
// ORCA parser (source/common/orca/orca_parser.cc, as documented in its
// tests): the form by its prefix; TEXT as comma-separated name=value
// pairs, whitespace trimmed, only the five top-level names and the
// named_metrics. and utilization. maps, no empty map key, no duplicate,
// values finite and at least 0; JSON as the proto3 JSON of the report,
// unknown fields refused; BIN as padded base64 of the serialized report.
// It is stricter than Envoy in one way: ':' between name and value, which
// some Envoy releases read, is refused, so the renderer must write '='.
func envoyParse(h string) (*v3orcapb.OrcaLoadReport, error) {
	form, rest, _ := strings.Cut(h, " ")
	switch form {
	case "TEXT":
		return parseText(rest)
	case "JSON":
		r := new(v3orcapb.OrcaLoadReport)
		if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(rest), r); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return r, checkValues(r)
	case "BIN":
		b, err := base64.StdEncoding.Strict().DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("invalid base64: %w", err)
		}
		r := new(v3orcapb.OrcaLoadReport)
		if err := proto.Unmarshal(b, r); err != nil {
			return nil, fmt.Errorf("invalid proto: %w", err)
		}
		return r, checkValues(r)
	}
	return nil, fmt.Errorf("unsupported ORCA header format: %.5s", h)
}

func parseText(rest string) (*v3orcapb.OrcaLoadReport, error) {
	r := &v3orcapb.OrcaLoadReport{NamedMetrics: map[string]float64{}, Utilization: map[string]float64{}}
	top := map[string]*float64{
		"cpu_utilization": &r.CpuUtilization, "mem_utilization": &r.MemUtilization,
		"application_utilization": &r.ApplicationUtilization, "eps": &r.Eps, "rps_fractional": &r.RpsFractional,
	}
	seen := map[string]bool{}
	for pair := range strings.SplitSeq(rest, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" || val == "" || strings.Contains(name, ":") {
			return nil, fmt.Errorf("malformed pair %q", pair)
		}
		if seen[name] {
			return nil, fmt.Errorf("endpoint-load-metrics contains duplicate metric: %s", name)
		}
		seen[name] = true
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("bad value %q for %s", val, name)
		}
		switch {
		case top[name] != nil:
			*top[name] = v
		case strings.HasPrefix(name, "named_metrics."):
			key := strings.TrimPrefix(name, "named_metrics.")
			if key == "" {
				return nil, errors.New("named metric key is empty.")
			}
			r.NamedMetrics[key] = v
		case strings.HasPrefix(name, "utilization."):
			key := strings.TrimPrefix(name, "utilization.")
			if key == "" {
				return nil, errors.New("utilization metric key is empty.")
			}
			r.Utilization[key] = v
		default:
			return nil, fmt.Errorf("unsupported metric name: %s", name)
		}
	}
	return r, nil
}

// checkValues refuses what the TEXT rules refuse in a decoded report: a
// value that is not finite or is negative.
func checkValues(r *v3orcapb.OrcaLoadReport) error {
	vals := []float64{r.CpuUtilization, r.MemUtilization, r.ApplicationUtilization, r.Eps, r.RpsFractional}
	for _, m := range []map[string]float64{r.NamedMetrics, r.Utilization, r.RequestCost} {
		for _, v := range m {
			vals = append(vals, v)
		}
	}
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("bad value %v", v)
		}
	}
	return nil
}

func TestEnvoyParseRefusesWhatEnvoyRefuses(t *testing.T) {
	for _, h := range []string{
		"XML <a/>", "TEXT named_metrics.a=1, named_metrics.a=2", "TEXT foo=1",
		"TEXT cpu_utilization=NaN", "TEXT named_metrics.=1", "TEXT utilization.=1", "TEXT cpu_utilization",
		"TEXT rps_fractional=-1", "TEXT named_metrics.busy:0", "TEXT eps=inf",
		`JSON {"unknown_field": 1}`, `JSON {"rps_fractional": -1}`, "BIN ***", "BIN CAE", // unpadded
	} {
		if _, err := envoyParse(h); err == nil {
			t.Errorf("envoyParse(%q) accepted it", h)
		}
	}
}

// updated is a Reporter fed s, with admissions at rate per second.
func updated(s report.Snapshot, perSec uint64) *orcagrpc.Reporter {
	var n uint64
	r := orcagrpc.NewReporter(orcagrpc.Options{Admitted: func() uint64 { return n }})
	at := time.Unix(1000, 0)
	s.At = at
	r.Update(&s)
	n, s.At = perSec*2, at.Add(2*time.Second)
	r.Update(&s)
	return r
}

// TestHeaderFormsCarryTheSameReport: for every snapshot of the metrics
// table, each form parses by Envoy's rules into exactly the report the
// gRPC trailer and the out-of-band service send.
func TestHeaderFormsCarryTheSameReport(t *testing.T) {
	for _, tc := range metricsCases {
		t.Run(tc.name, func(t *testing.T) {
			r := updated(tc.snap, 7)
			want := r.Report()
			if want.GetRpsFractional() != 7 {
				t.Fatalf("rps_fractional = %v, want 7", want.GetRpsFractional())
			}
			for _, f := range []orcagrpc.Format{orcagrpc.FormatText, orcagrpc.FormatJSON, orcagrpc.FormatBin} {
				h := r.Header(f)
				got, err := envoyParse(h)
				if err != nil {
					t.Fatalf("%s: Envoy would refuse %q: %v", f, h, err)
				}
				if !strings.HasPrefix(h, f.String()+" ") || !equalReports(got, want) {
					t.Errorf("%s: %q\nreads as %v\nwant %v", f, h, got, want)
				}
			}
		})
	}
}

// equalReports compares two reports, an empty map equal to a missing one.
func equalReports(a, b *v3orcapb.OrcaLoadReport) bool {
	norm := func(r *v3orcapb.OrcaLoadReport) *v3orcapb.OrcaLoadReport {
		c := proto.Clone(r).(*v3orcapb.OrcaLoadReport)
		for _, m := range []*map[string]float64{&c.NamedMetrics, &c.Utilization, &c.RequestCost} {
			if len(*m) == 0 {
				*m = nil
			}
		}
		return c
	}
	return proto.Equal(norm(a), norm(b))
}

// TestHeaderText: the TEXT form as the design document writes it, names
// in a fixed order, counts whole.
func TestHeaderText(t *testing.T) {
	s := report.Snapshot{
		Busy:     true,
		Requests: report.Requests{InFlight: 3, Queued: 1, Prefilling: 2, Limit: 4},
		Ranks:    []report.Rank{{KVTotalBlocks: engineN(1000), KVUsedBlocks: engineN(900), ActivePrefillTokens: slotgateN(1234567)}},
	}
	got := updated(s, 12).Header(orcagrpc.FormatText)
	want := "TEXT application_utilization=0.9, rps_fractional=12, named_metrics.active_prefill_tokens=1234567, " +
		"named_metrics.busy=1, named_metrics.in_flight=3, named_metrics.kv_cache_usage=0.9, " +
		"named_metrics.prefilling=2, named_metrics.queued=1"
	if got != want {
		t.Errorf("TEXT form\n got %q\nwant %q", got, want)
	}
}

// TestHeaderBeforeUpdate: before the first snapshot every form is a valid,
// empty report.
func TestHeaderBeforeUpdate(t *testing.T) {
	r := orcagrpc.NewReporter(orcagrpc.Options{})
	for _, f := range []orcagrpc.Format{orcagrpc.FormatText, orcagrpc.FormatJSON, orcagrpc.FormatBin} {
		got, err := envoyParse(r.Header(f))
		if f == orcagrpc.FormatText {
			// "TEXT " with nothing after it: Envoy refuses an empty pair,
			// so a report must never be sent before the first snapshot.
			if err == nil {
				t.Errorf("the empty TEXT form parsed: %v", got)
			}
			continue
		}
		if err != nil || !equalReports(got, &v3orcapb.OrcaLoadReport{}) {
			t.Errorf("%s before Update: %v, %v", f, got, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want orcagrpc.Format
		ok   bool
	}{
		{"TEXT", orcagrpc.FormatText, true}, {"text", orcagrpc.FormatText, true}, {" Json ", orcagrpc.FormatJSON, true},
		{"BIN", orcagrpc.FormatBin, true}, {"bin", orcagrpc.FormatBin, true},
		{"", 0, false}, {"PROTO", 0, false}, {"TEXT, JSON", 0, false},
	} {
		f, ok := orcagrpc.ParseFormat(tc.in)
		if f != tc.want || ok != tc.ok {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, %v", tc.in, f, ok, tc.want, tc.ok)
		}
	}
	if s := orcagrpc.Format(9).String(); s != "Format(9)" {
		t.Errorf("Format(9).String() = %q", s)
	}
}

// FuzzHeaderForms: whatever the snapshot and the rate, every form parses
// by Envoy's rules, and all three carry the same report.
func FuzzHeaderForms(f *testing.F) {
	f.Add(int64(200), int64(31), int64(30), int64(1234), 3, 1, 2, 8, true, uint64(12))
	f.Add(int64(0), int64(-5), int64(-1), int64(-7), -3, -1, -2, 0, false, uint64(0))
	f.Add(int64(1), int64(1<<62), int64(1<<62), int64(1<<62), 1<<30, 1<<30, 1<<30, 1, true, uint64(1<<63))
	f.Fuzz(func(t *testing.T, total, used, decode, prefill int64, inFlight, queued, prefilling, limit int, busy bool, perSec uint64) {
		eng := func(n int64) report.Field { return report.Field{N: n, Source: report.SourceEngine} }
		s := report.Snapshot{
			Busy:     busy,
			Requests: report.Requests{InFlight: inFlight, Queued: queued, Prefilling: prefilling, Limit: limit},
			Ranks: []report.Rank{{
				KVTotalBlocks: eng(total), KVUsedBlocks: eng(used), ActiveDecodeBlocks: eng(decode),
				ActivePrefillTokens: eng(prefill),
			}},
		}
		r := updated(s, perSec)
		var reports []*v3orcapb.OrcaLoadReport
		for _, form := range []orcagrpc.Format{orcagrpc.FormatText, orcagrpc.FormatJSON, orcagrpc.FormatBin} {
			got, err := envoyParse(r.Header(form))
			if err != nil {
				t.Fatalf("%s: Envoy would refuse %q: %v", form, r.Header(form), err)
			}
			reports = append(reports, got)
		}
		if !equalReports(reports[0], reports[1]) || !equalReports(reports[0], reports[2]) {
			t.Errorf("the forms differ:\nTEXT %v\nJSON %v\nBIN  %v", reports[0], reports[1], reports[2])
		}
	})
}
