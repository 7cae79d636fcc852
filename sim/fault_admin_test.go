package sim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dto "github.com/prometheus/client_model/go"
)

// call sends method path body to h and returns the recorder.
func call(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

const defaultFaultsJSON = `{"reset_rate":0,"error_rate":0,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`

// The admin call: GET shows the set, PUT and POST replace all of it (a
// missing field is 0 or the default pause) and answer the new set; a bad
// body gets 400 in OpenAI's shape, naming the field and the value, and
// changes nothing.
func TestFaultsAdmin(t *testing.T) {
	tests := []struct {
		name, method, body string
		status             int
		want               string // the answer: the set, or the error message
		after              string // GET's answer afterwards
	}{
		{"get", http.MethodGet, "", http.StatusOK, defaultFaultsJSON, defaultFaultsJSON},
		{"put the contract's example", http.MethodPut,
			`{"reset_rate":0.01,"error_rate":0.01,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`,
			http.StatusOK,
			`{"reset_rate":0.01,"error_rate":0.01,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`,
			`{"reset_rate":0.01,"error_rate":0.01,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`},
		{"post replaces the whole set", http.MethodPost, `{"stall_rate":0.5,"stall":"1m30s"}`, http.StatusOK,
			`{"reset_rate":0,"error_rate":0,"stall_rate":0.5,"stall":"1m30s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`,
			`{"reset_rate":0,"error_rate":0,"stall_rate":0.5,"stall":"1m30s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`},
		{"rate out of range", http.MethodPut, `{"error_rate":1.5}`, http.StatusBadRequest,
			"Invalid fault set: error_rate: must be a number from 0 through 1, got 1.5", defaultFaultsJSON},
		{"bad duration", http.MethodPut, `{"stall_rate":1,"stall":"forever"}`, http.StatusBadRequest,
			`Invalid fault set: stall: must be a non-negative duration string such as "2s" or "500ms", got "forever"`, defaultFaultsJSON},
		{"two problems", http.MethodPost, `{"reset_rate":-1,"typo":0}`, http.StatusBadRequest,
			"Invalid fault set: reset_rate: must be a number from 0 through 1, got -1; typo: unknown field, got 0", defaultFaultsJSON},
		{"not JSON", http.MethodPut, `reset_rate=1`, http.StatusBadRequest,
			"Invalid JSON body: invalid character 'r' looking for beginning of value", defaultFaultsJSON},
		{"not an object", http.MethodPut, `[]`, http.StatusBadRequest,
			`Invalid fault set: the body must be a JSON object such as {"reset_rate":0.01,"stall":"2s"}, got "[]"`, defaultFaultsJSON},
		{"delete", http.MethodDelete, "", http.StatusMethodNotAllowed,
			"Method DELETE not allowed for " + FaultsPath, defaultFaultsJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHandler(ServerOptions{Engine: newEngine(t, Options{})})
			if err != nil {
				t.Fatal(err)
			}
			rec := call(h, tt.method, FaultsPath, tt.body)
			got := strings.TrimSpace(rec.Body.String())
			if rec.Code != tt.status {
				t.Fatalf("%s: %d %s, want %d", tt.method, rec.Code, got, tt.status)
			}
			if tt.status != http.StatusOK {
				var e errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tt.status || e.Error.Type != errorType(tt.status) {
					t.Fatalf("error body %s is not OpenAI's shape for %d", got, tt.status)
				}
				got = e.Error.Message
			}
			if got != tt.want {
				t.Fatalf("answer\n %s\nwant\n %s", got, tt.want)
			}
			if after := strings.TrimSpace(call(h, http.MethodGet, FaultsPath, "").Body.String()); after != tt.after {
				t.Fatalf("GET afterwards\n %s\nwant\n %s", after, tt.after)
			}
		})
	}
}

// A change applies to the requests that arrive after it, over HTTP and
// over a gRPC service that shares the Faults; the counts show at
// OwnMetricsPath.
func TestFaultsAdminApplies(t *testing.T) {
	e := newEngine(t, Options{SpeedupRatio: 1000})
	runEngine(t, e)
	f := mustFaults(t, DefaultFaultSet(), 3)
	h, err := NewHandler(ServerOptions{Engine: e, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	g := serveGRPCWith(t, GRPCOptions{Engine: e, Faults: f})
	completion := func() int {
		return call(h, http.MethodPost, "/v1/completions", `{"prompt":"hi","max_tokens":2}`).Code
	}
	generateCode := func() codes.Code {
		stream, err := g.client.Generate(t.Context(), genReq(promptOf(4), 2, true, false))
		if err == nil {
			_, err = recvAll(stream)
		}
		return status.Code(err)
	}
	if c, gc := completion(), generateCode(); c != http.StatusOK || gc != codes.OK {
		t.Fatalf("before the change: HTTP %d, gRPC %v", c, gc)
	}
	if rec := call(h, http.MethodPut, FaultsPath, `{"error_rate":1}`); rec.Code != http.StatusOK {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	if c, gc := completion(), generateCode(); c != http.StatusInternalServerError || gc != codes.Internal {
		t.Fatalf("after error_rate 1: HTTP %d, gRPC %v; want 500 and INTERNAL", c, gc)
	}
	if rec := call(h, http.MethodPost, FaultsPath, `{}`); rec.Code != http.StatusOK {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	if c, gc := completion(), generateCode(); c != http.StatusOK || gc != codes.OK {
		t.Fatalf("after {}: HTTP %d, gRPC %v", c, gc)
	}
	mfs := scrapePath(t, h, OwnMetricsPath)
	want := []wantSeries{}
	for _, k := range FaultKinds() {
		n := 0.0
		if k == FaultError {
			n = 2
		}
		want = append(want, wantSeries{MetricFaults, map[string]string{"fault": string(k)}, dto.MetricType_COUNTER, n})
	}
	checkSeries(t, mfs, want)
}
