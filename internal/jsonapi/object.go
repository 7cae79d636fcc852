package jsonapi

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeObject decodes body as one JSON object whose keys are among known,
// each optional. On success it returns the object's members by key in a
// map that is never nil (empty for {}). Each value is raw JSON, valid and
// without surrounding white space, so a caller tells the kinds apart by
// the first byte; a key given twice keeps its last value, as encoding/json
// does. Keys are matched exactly (case included).
//
// Everything else is a 422 (Unprocessable): a body that is not valid JSON
// or holds more than one value ("invalid JSON body: …"), a JSON value that
// is not an object ("invalid JSON body: want an object, got array"), and
// keys that are not known ("unknown field \"a\"", or "unknown fields
// \"A\", \"b\"", sorted).
func DecodeObject(body []byte, known ...string) (map[string]json.RawMessage, *Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, Unprocessable("invalid JSON body: %s", jsonProblem(err))
	}
	if fields == nil {
		return nil, Unprocessable("invalid JSON body: want an object, got null")
	}
	if unknown := unknownKeys(fields, known); len(unknown) > 0 {
		noun := "field"
		if len(unknown) > 1 {
			noun = "fields"
		}
		return nil, Unprocessable("unknown %s %s", noun, strings.Join(unknown, ", "))
	}
	return fields, nil
}

// jsonProblem describes err without the Go type names encoding/json puts
// in some messages.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return "want an object, got " + typeErr.Value
	}
	return err.Error()
}

// unknownKeys returns the keys of fields that are not in known, sorted and
// quoted, so that the message is the same whatever the map order.
func unknownKeys(fields map[string]json.RawMessage, known []string) []string {
	var unknown []string
	for k := range fields {
		if !slices.Contains(known, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	slices.Sort(unknown)
	return unknown
}

// clipLen is how many bytes of a raw value Clip keeps.
const clipLen = 40

// Clip shortens a raw value for a message, as a body may hold a number of
// thousands of digits: a value of up to 40 bytes is returned whole, a
// longer one cut to at most 40 bytes, never inside a UTF-8 character, and
// followed by "...".
func Clip(raw json.RawMessage) string {
	if len(raw) <= clipLen {
		return string(raw)
	}
	cut := clipLen
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut-- // do not split a character
	}
	return string(raw[:cut]) + "..."
}
