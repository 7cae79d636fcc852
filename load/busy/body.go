package busy

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

// request is a parsed POST /busy_threshold body.
type request struct {
	// model is the body's model name; empty when absent, null or "".
	model string
	// patch holds the thresholds the body sets.
	patch Thresholds
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
func parseRequest(body []byte) (request, *jsonapi.Error) {
	fields, jerr := jsonapi.DecodeObject(body, "model", fieldDecode, fieldPrefill, fieldPrefillFrac)
	if jerr != nil {
		return request{}, jerr
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
		return request{}, jsonapi.Unprocessable("%s", strings.Join(p.kind, "; "))
	}
	if len(p.rng) > 0 {
		return request{}, &jsonapi.Error{Status: http.StatusBadRequest, Message: strings.Join(p.rng, "; ")}
	}
	return req, nil
}

func parseModel(raw json.RawMessage, model *string) *jsonapi.Error {
	if isNull(raw) {
		return nil
	}
	if raw[0] != '"' {
		return jsonapi.Unprocessable("model must be a string, got %s", jsonapi.Clip(raw))
	}
	// A valid JSON string, as the whole body parsed: this cannot fail.
	if err := json.Unmarshal(raw, model); err != nil {
		return jsonapi.Unprocessable("model: %s", err)
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
		p.kind = append(p.kind, fmt.Sprintf("%s must be a number or null, got %s", name, jsonapi.Clip(raw)))
		return nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil { // only ErrRange: JSON's number syntax is a subset of Go's
		p.rng = append(p.rng, fmt.Sprintf("%s must be a finite number, got %s", name, jsonapi.Clip(raw)))
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
		p.kind = append(p.kind, fmt.Sprintf("%s must be a number or null, got %s", name, jsonapi.Clip(raw)))
		return nil
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		p.rng = append(p.rng, fmt.Sprintf("%s must be an integer between 0 and %d, got %s", name, uint64(math.MaxUint64), jsonapi.Clip(raw)))
		return nil
	}
	return &v
}
