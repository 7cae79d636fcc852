package busy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// request is a parsed POST /busy_threshold body.
type request struct {
	// model is the body's model name; empty when absent, null or "".
	model string
	// patch holds the thresholds the body sets.
	patch Thresholds
}

// requestError is a body the handler refuses, with its HTTP status.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// unprocessable is a body that is not the expected JSON: Dynamo answers
// 422 when its JSON extractor cannot deserialize the body.
func unprocessable(format string, args ...any) *requestError {
	return &requestError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf(format, args...)}
}

// parseRequest parses a POST body: one JSON object whose keys are "model"
// and the three threshold fields, each optional; null is the same as
// absent. Keys are matched exactly, unlike encoding/json's struct
// decoding, which also takes "MODEL" for "model".
//
// A body that is not such an object, a key that is none of these, a model
// that is not a string or a threshold that is not a number is a 422. A
// number outside its field's range (a negative, fractional or too large
// token count, a fraction out of range, a number too large for float64) is
// a 400 that lists every such field.
func parseRequest(body []byte) (request, *requestError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return request{}, unprocessable("invalid JSON body: %s", jsonProblem(err))
	}
	if fields == nil {
		return request{}, unprocessable("invalid JSON body: want an object, got null")
	}
	if unknown := unknownKeys(fields); len(unknown) > 0 {
		noun := "field"
		if len(unknown) > 1 {
			noun = "fields"
		}
		return request{}, unprocessable("unknown %s %s", noun, strings.Join(unknown, ", "))
	}
	var req request
	if err := parseModel(fields["model"], &req.model); err != nil {
		return request{}, err
	}
	var p problems
	req.patch.ActiveDecodeBlocks = p.float(fields, fieldDecode)
	p.validate(Thresholds{ActiveDecodeBlocks: req.patch.ActiveDecodeBlocks})
	req.patch.ActivePrefillTokens = p.tokens(fields, fieldPrefill)
	req.patch.ActivePrefillTokensFrac = p.float(fields, fieldPrefillFrac)
	p.validate(Thresholds{ActivePrefillTokensFrac: req.patch.ActivePrefillTokensFrac})
	if len(p.kind) > 0 {
		return request{}, unprocessable("%s", strings.Join(p.kind, "; "))
	}
	if len(p.rng) > 0 {
		return request{}, &requestError{status: http.StatusBadRequest, msg: strings.Join(p.rng, "; ")}
	}
	return req, nil
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

// unknownKeys returns the keys that are not fields of the API, sorted and
// quoted, so that the message is the same whatever the map order.
func unknownKeys(fields map[string]json.RawMessage) []string {
	var unknown []string
	for k := range fields {
		switch k {
		case "model", fieldDecode, fieldPrefill, fieldPrefillFrac:
		default:
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	slices.Sort(unknown)
	return unknown
}

func parseModel(raw json.RawMessage, model *string) *requestError {
	if isNull(raw) {
		return nil
	}
	if raw[0] != '"' {
		return unprocessable("model must be a string, got %s", clip(raw))
	}
	// A valid JSON string, as the whole body parsed: this cannot fail.
	if err := json.Unmarshal(raw, model); err != nil {
		return unprocessable("model: %s", err)
	}
	return nil
}

// isNull reports an absent or null value. The raw values come from a body
// that parsed, so they are trimmed and valid.
func isNull(raw json.RawMessage) bool {
	return raw == nil || string(raw) == "null"
}

// isNumber tells a JSON number from the other kinds by its first byte.
func isNumber(raw json.RawMessage) bool {
	return raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')
}

// problems collects what is wrong with the threshold fields, so that one
// answer names them all.
type problems struct {
	kind []string // a value that is not a number: the body is a 422
	rng  []string // a number out of its field's range: a 400
}

// validate records Validate's problems with t, which holds one field: one
// call per field keeps the message in the fields' order.
func (p *problems) validate(t Thresholds) {
	if err := t.Validate(); err != nil {
		p.rng = append(p.rng, err.Error())
	}
}

// float parses a fraction field; validate checks its range.
func (p *problems) float(fields map[string]json.RawMessage, name string) *float64 {
	raw := fields[name]
	if isNull(raw) {
		return nil
	}
	if !isNumber(raw) {
		p.kind = append(p.kind, fmt.Sprintf("%s must be a number or null, got %s", name, clip(raw)))
		return nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil { // only ErrRange: JSON's number syntax is a subset of Go's
		p.rng = append(p.rng, fmt.Sprintf("%s must be a finite number, got %s", name, clip(raw)))
		return nil
	}
	return positiveZero(v)
}

// tokens parses a token count field. Dynamo's field is a u64, so only a
// plain non-negative integer fits: 1.0 and 1e3 do not.
func (p *problems) tokens(fields map[string]json.RawMessage, name string) *uint64 {
	raw := fields[name]
	if isNull(raw) {
		return nil
	}
	if !isNumber(raw) {
		p.kind = append(p.kind, fmt.Sprintf("%s must be a number or null, got %s", name, clip(raw)))
		return nil
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		p.rng = append(p.rng, fmt.Sprintf("%s must be an integer between 0 and %d, got %s", name, uint64(math.MaxUint64), clip(raw)))
		return nil
	}
	return &v
}

// clip shortens a raw value for a message: a body may hold a number of
// thousands of digits.
func clip(raw json.RawMessage) string {
	const maxLen = 40
	if len(raw) <= maxLen {
		return string(raw)
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut-- // do not split a character
	}
	return string(raw[:cut]) + "..."
}
