package jsonapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

func TestDecodeObject(t *testing.T) {
	known := []string{"model", "a"}
	for _, tc := range []struct {
		name      string
		body      string
		want      map[string]string // raw values; nil when refused
		wantError string
	}{
		{name: "empty object", body: `{}`, want: map[string]string{}},
		{name: "every kind of value", body: `{"model":"m","a":[1, {"x":null}]}`,
			want: map[string]string{"model": `"m"`, "a": `[1, {"x":null}]`}},
		{name: "white space around values is trimmed", body: " \t{ \"a\" :\n 1.5e3 , \"model\": null }\n",
			want: map[string]string{"a": `1.5e3`, "model": `null`}},
		{name: "a key given twice keeps its last value", body: `{"a":1,"a":"two"}`, want: map[string]string{"a": `"two"`}},
		{name: "null", body: `null`, wantError: "invalid JSON body: want an object, got null"},
		{name: "array", body: `[{"a":1}]`, wantError: "invalid JSON body: want an object, got array"},
		{name: "number", body: `0`, wantError: "invalid JSON body: want an object, got number"},
		{name: "string", body: `"a"`, wantError: "invalid JSON body: want an object, got string"},
		{name: "bool", body: `true`, wantError: "invalid JSON body: want an object, got bool"},
		{name: "no body", body: ``, wantError: "invalid JSON body: unexpected end of JSON input"},
		{name: "cut short", body: `{"a":`, wantError: "invalid JSON body: unexpected end of JSON input"},
		{name: "two values", body: `{} {}`, wantError: "invalid JSON body: invalid character '{' after top-level value"},
		{name: "bad number", body: `{"a":01}`,
			wantError: "invalid JSON body: invalid character '1' after object key:value pair"},
		{name: "key case differs", body: `{"MODEL":"m"}`, wantError: `unknown field "MODEL"`},
		{name: "unknown keys sorted and quoted", body: `{"c":1,"a":1,"B":2,"a\nb":3}`,
			wantError: `unknown fields "B", "a\nb", "c"`},
		{name: "unknown key with a bad value", body: `{"x":"\u0000"}`, wantError: `unknown field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, err := jsonapi.DecodeObject([]byte(tc.body), known...)
			if tc.wantError != "" {
				if err == nil || err.Status != http.StatusUnprocessableEntity || err.Message != tc.wantError || fields != nil {
					t.Fatalf("DecodeObject(%q) = %v, %+v; want nil, {422 %q}", tc.body, fields, err, tc.wantError)
				}
				return
			}
			if err != nil || fields == nil {
				t.Fatalf("DecodeObject(%q) = %v, %+v; want %v", tc.body, fields, err, tc.want)
			}
			got := map[string]string{}
			for k, v := range fields {
				got[k] = string(v)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DecodeObject(%q) = %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}

// TestDecodeObjectNoKeys checks that with no known keys only the empty
// object is accepted.
func TestDecodeObjectNoKeys(t *testing.T) {
	if fields, err := jsonapi.DecodeObject([]byte(`{}`)); err != nil || fields == nil || len(fields) != 0 {
		t.Errorf("DecodeObject({}) = %v, %+v; want an empty map", fields, err)
	}
	if _, err := jsonapi.DecodeObject([]byte(`{"a":1}`)); err == nil || err.Message != `unknown field "a"` {
		t.Errorf(`DecodeObject({"a":1}) = %+v, want unknown field "a"`, err)
	}
}

func TestClip(t *testing.T) {
	forty := strings.Repeat("7", 40)
	for _, tc := range []struct {
		name, raw, want string
	}{
		{name: "empty", raw: "", want: ""},
		{name: "short", raw: `"abc"`, want: `"abc"`},
		{name: "exactly 40 bytes", raw: forty, want: forty},
		{name: "41 bytes", raw: forty + "8", want: forty + "..."},
		{name: "thousands of digits", raw: strings.Repeat("9", 5000), want: strings.Repeat("9", 40) + "..."},
		// "é" is two bytes: one starting at byte 39 would be split by a
		// cut at 40, so the cut moves back before it.
		{name: "a character across the cut", raw: `"` + strings.Repeat("a", 38) + "é" + "bc", want: `"` + strings.Repeat("a", 38) + "..."},
		{name: "a character ending at the cut", raw: `"` + strings.Repeat("a", 37) + "é" + "bc", want: `"` + strings.Repeat("a", 37) + "é..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsonapi.Clip(json.RawMessage(tc.raw)); got != tc.want {
				t.Errorf("Clip(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}
