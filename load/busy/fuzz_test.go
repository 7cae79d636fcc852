package busy_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/slotgate/slotgate/load/busy"
)

// FuzzHandlerPOST sends any body to POST /busy_threshold and checks the
// handler's promises: a status from the documented set, an application/json
// answer of the documented shape, a store that changes only on 200, only in
// the fields the body sets, and only to valid values.
func FuzzHandlerPOST(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `0`, ``, `{"model":"m"}`, `{"model":7}`, `{"MODEL":"m"}`,
		`{"active_decode_blocks_threshold":0.5,"active_prefill_tokens_threshold":1,"active_prefill_tokens_threshold_frac":2}`,
		`{"active_decode_blocks_threshold":null}`, `{"active_decode_blocks_threshold":1.0000001}`,
		`{"active_decode_blocks_threshold":1e400}`, `{"active_decode_blocks_threshold":"0.5"}`,
		`{"active_prefill_tokens_threshold":-1}`, `{"active_prefill_tokens_threshold":1e2}`,
		`{"active_prefill_tokens_threshold":18446744073709551616}`,
		`{"active_prefill_tokens_threshold_frac":-0}`, `{"active_prefill_tokens_threshold_frac":1e-400}`,
		`{"model":"\ud800","active_prefill_tokens_threshold":0}`, `{"a":1,"a":2}`,
		`{"active_prefill_tokens_threshold":1,"active_prefill_tokens_threshold":-1}`, `{} {}`, " \t{}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		changes := 0
		s, err := busy.NewStore(preset, func() { changes++ })
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		busy.NewHandler(s, "llama", nil).ServeHTTP(w, post(string(body)))
		after := s.Load()
		if want := map[bool]int{false: 0, true: 1}[after.String() != presetStr]; changes != want {
			t.Fatalf("onChange called %d times, yet the store went from %s to %s", changes, presetStr, after)
		}
		checkFuzzStatus(t, body, w.Code)
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type = %q", ct)
		}
		if w.Code != http.StatusOK {
			checkError(t, w.Body.Bytes(), "~")
			if after.String() != presetStr {
				t.Fatalf("refused with %d, yet the store changed to %s", w.Code, after)
			}
			return
		}
		if err := after.Validate(); err != nil {
			t.Fatalf("the store holds invalid thresholds: %v", err)
		}
		checkUnsetKept(t, body, after)
		checkAnswer(t, w.Body.Bytes(), after)
	})
}

// checkFuzzStatus checks the status against what can be told of the body
// without parsing it the handler's way.
func checkFuzzStatus(t *testing.T, body []byte, code int) {
	t.Helper()
	switch {
	case len(body) > busy.MaxBodyBytes:
		if code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for a body of %d bytes, want 413", code, len(body))
		}
	case !json.Valid(body):
		if code != http.StatusUnprocessableEntity {
			t.Fatalf("status %d for invalid JSON, want 422", code)
		}
	case code != http.StatusOK && code != http.StatusBadRequest && code != http.StatusUnprocessableEntity:
		t.Fatalf("status %d, want 200, 400 or 422", code)
	}
}

// checkUnsetKept checks that a field the body leaves out, or sets to null,
// kept the preset's value.
func checkUnsetKept(t *testing.T, body []byte, after busy.Thresholds) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("200 for a body that is not a JSON object: %v", err)
	}
	absent := func(k string) bool { v, ok := fields[k]; return !ok || string(v) == "null" }
	keep := busy.Thresholds{ActiveDecodeBlocks: after.ActiveDecodeBlocks, ActivePrefillTokens: after.ActivePrefillTokens, ActivePrefillTokensFrac: after.ActivePrefillTokensFrac}
	if absent("active_decode_blocks_threshold") {
		keep.ActiveDecodeBlocks = preset.ActiveDecodeBlocks
	}
	if absent("active_prefill_tokens_threshold") {
		keep.ActivePrefillTokens = preset.ActivePrefillTokens
	}
	if absent("active_prefill_tokens_threshold_frac") {
		keep.ActivePrefillTokensFrac = preset.ActivePrefillTokensFrac
	}
	if keep.String() != after.String() {
		t.Fatalf("store = %s, but the body %q does not set the fields that differ from %s", after, body, keep)
	}
}

// checkAnswer checks that a 200 answer is one object holding the store's
// values.
func checkAnswer(t *testing.T, answer []byte, after busy.Thresholds) {
	t.Helper()
	var keys map[string]json.RawMessage
	var got struct {
		Model *string  `json:"model"`
		D     *float64 `json:"active_decode_blocks_threshold"`
		T     *uint64  `json:"active_prefill_tokens_threshold"`
		F     *float64 `json:"active_prefill_tokens_threshold_frac"`
	}
	if err := json.Unmarshal(answer, &keys); err != nil || len(keys) != 4 {
		t.Fatalf("answer %s: want one object of four keys (%v)", answer, err)
	}
	if err := json.Unmarshal(answer, &got); err != nil || got.Model == nil {
		t.Fatalf("answer %s: want a model and the three fields (%v)", answer, err)
	}
	if th := (busy.Thresholds{ActiveDecodeBlocks: got.D, ActivePrefillTokens: got.T, ActivePrefillTokensFrac: got.F}); th.String() != after.String() {
		t.Fatalf("answer %s, want the store's %s", answer, after)
	}
}

// FuzzParse checks the flag parsers: a value they accept is valid, and
// formatting it gives text they parse back to the same value.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", "None", "none", " 0.8 ", "1", "-0", "1e-3", "NaN", "Inf", "0x1p-1", "18446744073709551615", "1_0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := busy.ParseFraction(s); err == nil && v != nil {
			checkFloatRoundTrip(t, busy.ParseFraction, busy.Thresholds{ActiveDecodeBlocks: v}, *v)
		}
		if v, err := busy.ParseFrac(s); err == nil && v != nil {
			checkFloatRoundTrip(t, busy.ParseFrac, busy.Thresholds{ActivePrefillTokensFrac: v}, *v)
		}
		if v, err := busy.ParseTokens(s); err == nil && v != nil {
			back, err := busy.ParseTokens(strconv.FormatUint(*v, 10))
			if err != nil || *back != *v {
				t.Fatalf("ParseTokens(%q) = %d, which does not parse back: %v", s, *v, err)
			}
		}
	})
}

func checkFloatRoundTrip(t *testing.T, parse func(string) (*float64, error), th busy.Thresholds, v float64) {
	t.Helper()
	if err := th.Validate(); err != nil {
		t.Fatalf("parsed %v, which Validate refuses: %v", v, err)
	}
	if math.Signbit(v) {
		t.Fatalf("parsed -0")
	}
	back, err := parse(strconv.FormatFloat(v, 'g', -1, 64))
	if err != nil || back == nil || *back != v {
		t.Fatalf("%v does not parse back: %v, %v", v, back, err)
	}
}
