package orcagrpc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/orca"
	"google.golang.org/protobuf/encoding/protojson"
)

// HeaderKey is the HTTP response header (and trailer) that carries a load
// report, in one of the three Formats, as Envoy reads it: the value starts
// with the form's name and a space.
const HeaderKey = "endpoint-load-metrics"

// FormatHeader is the request header with which a client asks for a form
// (TEXT, JSON or BIN), as vLLM reads it.
const FormatHeader = "endpoint-load-metrics-format"

// Format is a form of the HTTP load report.
type Format uint8

// The forms, as Envoy's ORCA parser (source/common/orca/orca_parser.cc)
// reads them.
const (
	// FormatText is "TEXT name=value, name=value", the form of the ORCA
	// design document, of vLLM and of Envoy since 1.33.
	FormatText Format = iota
	// FormatJSON is "JSON " and the proto3 JSON of the OrcaLoadReport,
	// field names as in the proto (Envoy's parser takes those and the
	// lowerCamelCase ones, and refuses unknown fields).
	FormatJSON
	// FormatBin is "BIN " and the padded standard base64 of the serialized
	// OrcaLoadReport (older Envoys refuse unpadded base64).
	FormatBin
	formats // the number of forms
)

var formatNames = [formats]string{"TEXT", "JSON", "BIN"}

// String is the form's name as the header writes it: TEXT, JSON or BIN.
func (f Format) String() string {
	if f < formats {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat reads a form's name in any case, with spaces around it
// ignored; ok is false for any other value.
func ParseFormat(s string) (f Format, ok bool) {
	s = strings.TrimSpace(s)
	for i, name := range formatNames {
		if strings.EqualFold(s, name) {
			return Format(i), true
		}
	}
	return 0, false
}

// headerForms renders one report in every form. sm and r are the same
// report (r is toProto(sm)); bin is r serialized, empty if that failed.
func headerForms(sm *orca.ServerMetrics, r *v3orcapb.OrcaLoadReport, bin []byte) [formats]string {
	var out [formats]string
	out[FormatText] = textForm(sm)
	out[FormatJSON] = jsonForm(r)
	out[FormatBin] = "BIN " + base64.StdEncoding.EncodeToString(bin)
	return out
}

// textForm is sm in the TEXT form: the top-level values that are set,
// then each map's entries under its prefix, names sorted, pairs joined by
// ", ". A value that is not a finite number of at least 0 is left out
// rather than sent (Envoy refuses the whole report for one); the Metrics
// of a snapshot have none.
func textForm(sm *orca.ServerMetrics) string {
	var b strings.Builder
	b.WriteString("TEXT ")
	first := true
	put := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	put("application_utilization", sm.AppUtilization)
	put("cpu_utilization", sm.CPUUtilization)
	put("mem_utilization", sm.MemUtilization)
	put("rps_fractional", sm.QPS)
	put("eps", sm.EPS)
	for _, name := range slices.Sorted(maps.Keys(sm.Utilization)) {
		put("utilization."+name, sm.Utilization[name])
	}
	for _, name := range slices.Sorted(maps.Keys(sm.NamedMetrics)) {
		put("named_metrics."+name, sm.NamedMetrics[name])
	}
	return b.String()
}

// jsonForm is r in the JSON form, compact. protojson spaces its output at
// random on purpose; compacting makes the same report the same header.
// It cannot fail on this message (finite numbers, UTF-8 names); were it
// to, the report would be "JSON {}", which Envoy reads as empty.
func jsonForm(r *v3orcapb.OrcaLoadReport) string {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(r)
	var compact bytes.Buffer
	if err != nil || json.Compact(&compact, raw) != nil {
		return "JSON {}"
	}
	return "JSON " + compact.String()
}
