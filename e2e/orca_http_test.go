package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// decodeORCA reads an endpoint-load-metrics value in any of its forms
// into the report: JSON strictly (unknown fields refused, as Envoy does),
// BIN as padded base64, TEXT as name=value pairs of the names Envoy takes.
func decodeORCA(t *testing.T, h string) *v3orcapb.OrcaLoadReport {
	t.Helper()
	r := &v3orcapb.OrcaLoadReport{NamedMetrics: map[string]float64{}}
	form, rest, _ := strings.Cut(h, " ")
	var err error
	switch form {
	case "JSON":
		err = protojson.Unmarshal([]byte(rest), r)
	case "BIN":
		var b []byte
		if b, err = base64.StdEncoding.Strict().DecodeString(rest); err == nil {
			err = proto.Unmarshal(b, r)
		}
	case "TEXT":
		for pair := range strings.SplitSeq(rest, ", ") {
			name, val, _ := strings.Cut(pair, "=")
			v, perr := strconv.ParseFloat(val, 64)
			key, named := strings.CutPrefix(name, "named_metrics.")
			switch {
			case perr != nil || v < 0:
				t.Fatalf("%q: bad pair %q", h, pair)
			case named:
				r.NamedMetrics[key] = v
			case name == "application_utilization":
				r.ApplicationUtilization = v
			case name == "rps_fractional":
				r.RpsFractional = v
			default:
				t.Fatalf("%q: a name Envoy refuses: %q", h, name)
			}
		}
	default:
		t.Fatalf("%q: no form Envoy reads", h)
	}
	if err != nil {
		t.Fatalf("%q does not decode: %v", h, err)
	}
	return r
}

// orcaAnswer is what a client saw of one streamed completion's load
// report: the header, the trailer, and the protocol.
type orcaAnswer struct {
	header, trailer string
	protoMajor      int
}

// streamORCA sends a streamed completion through client with the request
// headers extra and reads the whole answer.
func streamORCA(t *testing.T, client *http.Client, url string, extra map[string]string) orcaAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	body := `{"prompt":"hello there","max_tokens":8,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %d: %v", resp.StatusCode, err)
	}
	return orcaAnswer{header: resp.Header.Get("Endpoint-Load-Metrics"), trailer: resp.Trailer.Get("Endpoint-Load-Metrics"),
		protoMajor: resp.ProtoMajor}
}

// h2cClient speaks HTTP/2 without TLS (prior knowledge), as Envoy does to
// an upstream configured for it.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

// TestORCAHTTPForms: through the real binary in front of enginesim, the
// ORCA report comes in the form the request asks for, else in
// --orca-format; a streamed answer carries it again in its trailer over
// HTTP/2 always and over HTTP/1.1 when the client sends "TE: trailers";
// every form decodes into a report with slotgate's named metrics.
func TestORCAHTTPForms(t *testing.T) {
	t.Parallel()
	_, line := runEnginesim(t, "orca", "--listen", "127.0.0.1:0", "--max-num-seqs", "4")
	var eng struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &eng); err != nil {
		t.Fatal(err)
	}
	sg := start(t, "http://"+eng.Addr, nil, "--engine-request-limit", "4", "--orca-header", "--orca-format", "JSON")
	h1 := &http.Client{Transport: &http.Transport{}}
	for _, tc := range []struct {
		name          string
		client        *http.Client
		extra         map[string]string
		form          string
		trailer       bool
		wantHTTPMajor int
	}{
		{name: "HTTP/1.1, the default form", client: h1, form: "JSON", wantHTTPMajor: 1},
		{name: "HTTP/1.1, TE trailers", client: h1, extra: map[string]string{"TE": "trailers"}, form: "JSON", trailer: true, wantHTTPMajor: 1},
		{name: "HTTP/1.1, BIN asked", client: h1, extra: map[string]string{"Endpoint-Load-Metrics-Format": "BIN"}, form: "BIN", wantHTTPMajor: 1},
		{name: "h2c, TEXT asked", client: h2cClient(), extra: map[string]string{"Endpoint-Load-Metrics-Format": "text"}, form: "TEXT", trailer: true, wantHTTPMajor: 2},
		{name: "h2c, the default form", client: h2cClient(), form: "JSON", trailer: true, wantHTTPMajor: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := streamORCA(t, tc.client, sg.proxy, tc.extra)
			if got.protoMajor != tc.wantHTTPMajor {
				t.Fatalf("answered over HTTP/%d, want HTTP/%d", got.protoMajor, tc.wantHTTPMajor)
			}
			values := []string{got.header}
			if tc.trailer {
				values = append(values, got.trailer)
			} else if got.trailer != "" {
				t.Errorf("a trailer %q the client did not ask for", got.trailer)
			}
			for _, v := range values {
				if !strings.HasPrefix(v, tc.form+" ") {
					t.Fatalf("report %q (header %q, trailer %q), want the %s form", v, got.header, got.trailer, tc.form)
				}
				r := decodeORCA(t, v)
				if _, ok := r.GetNamedMetrics()["in_flight"]; !ok {
					t.Errorf("report %q has no in_flight", v)
				}
			}
		})
	}
}

// TestORCAAskedWithoutTheFlag: without --orca-header a request that names
// a form still gets the report in it, as vLLM answers; one that names
// none gets none.
func TestORCAAskedWithoutTheFlag(t *testing.T) {
	t.Parallel()
	_, line := runEnginesim(t, "orca", "--listen", "127.0.0.1:0", "--max-num-seqs", "4")
	var eng struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &eng); err != nil {
		t.Fatal(err)
	}
	sg := start(t, "http://"+eng.Addr, nil, "--engine-request-limit", "4")
	if got := streamORCA(t, http.DefaultClient, sg.proxy, nil); got.header != "" || got.trailer != "" {
		t.Errorf("not asked: header %q, trailer %q; want none", got.header, got.trailer)
	}
	got := streamORCA(t, http.DefaultClient, sg.proxy, map[string]string{"Endpoint-Load-Metrics-Format": "JSON"})
	if !strings.HasPrefix(got.header, "JSON ") {
		t.Fatalf("asked for JSON: header %q", got.header)
	}
	decodeORCA(t, got.header)
}
