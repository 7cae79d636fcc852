package jsonapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

// FuzzDecodeObject checks DecodeObject against a reference decoding of any
// body, with one fuzzed known key besides two fixed ones: it accepts
// exactly the JSON objects whose keys are all known, returns each member's
// raw value trimmed and valid, and refuses everything else with a 422 whose
// message names the unknown keys sorted and quoted.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []struct{ body, key string }{
		{`{}`, ""}, {`null`, "a"}, {`[]`, "a"}, {`0`, "a"}, {``, "a"}, {`{"a":1}`, "a"},
		{`{"k":1,"A":2}`, "k"}, {`{"a":1,"a":2}`, "a"}, {`{} {}`, "a"}, {" \t{\"b\" : [1, 2] }\n", ""},
		{`{"\ud800":1}`, "\ufffd"}, {`{"a":"\u0000","b":{"c":null}}`, "model"}, {`{"b":1e400}`, ""}, {"{\"\xff\":1}", "\xff"},
	} {
		f.Add([]byte(seed.body), seed.key)
	}
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		known := []string{"model", "b", key}
		fields, err := jsonapi.DecodeObject(body, known...)

		// The reference: a valid body holds one value; decode it with
		// UseNumber, as a number beyond float64 is still valid JSON.
		var ref any
		valid := json.Valid(body)
		if valid {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&ref); err != nil {
				t.Fatalf("decode valid JSON %q: %v", body, err)
			}
		}
		obj, isObj := ref.(map[string]any)
		var unknown []string
		for k := range obj {
			if !slices.Contains(known, k) {
				unknown = append(unknown, strconv.Quote(k))
			}
		}
		slices.Sort(unknown)

		switch {
		case !valid || !isObj:
			if err == nil || fields != nil || err.Status != http.StatusUnprocessableEntity ||
				!strings.HasPrefix(err.Message, "invalid JSON body: ") {
				t.Fatalf("DecodeObject(%q) = %v, %+v; want a 422 invalid JSON body", body, fields, err)
			}
		case len(unknown) > 0:
			want := "unknown field " + unknown[0]
			if len(unknown) > 1 {
				want = "unknown fields " + strings.Join(unknown, ", ")
			}
			if err == nil || fields != nil || err.Status != http.StatusUnprocessableEntity || err.Message != want {
				t.Fatalf("DecodeObject(%q) = %v, %+v; want a 422 %q", body, fields, err, want)
			}
		default:
			if err != nil || fields == nil || len(fields) != len(obj) {
				t.Fatalf("DecodeObject(%q) = %v, %+v; want the %d members of %v", body, fields, err, len(obj), obj)
			}
			for k, raw := range fields {
				if _, ok := obj[k]; !ok || !utf8.ValidString(k) {
					t.Fatalf("DecodeObject(%q) returned key %q, not a key of %v", body, k, obj)
				}
				if !json.Valid(raw) || len(raw) == 0 || !bytes.Equal(raw, bytes.TrimSpace(raw)) {
					t.Fatalf("DecodeObject(%q)[%q] = %q, want a trimmed JSON value", body, k, raw)
				}
			}
		}
	})
}
