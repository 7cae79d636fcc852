package busy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Path is where Dynamo serves the API; mount the handler there.
const Path = "/busy_threshold"

// MaxBodyBytes bounds a POST body. A larger one is refused with 413 before
// it is parsed.
const MaxBodyBytes = 64 << 10

// allowedMethods answers a 405. HEAD is GET without the body, which
// net/http drops by itself.
const allowedMethods = "GET, HEAD, POST"

// thresholdsJSON is one model's thresholds in Dynamo's shape: every field
// present, null when the check is off.
type thresholdsJSON struct {
	Model                   string   `json:"model"`
	ActiveDecodeBlocks      *float64 `json:"active_decode_blocks_threshold"`
	ActivePrefillTokens     *uint64  `json:"active_prefill_tokens_threshold"`
	ActivePrefillTokensFrac *float64 `json:"active_prefill_tokens_threshold_frac"`
}

type handler struct {
	store *Store
	model string
	logf  func(msg string, kv ...any)
}

// NewHandler returns the handler of Dynamo's busy-threshold admin API for
// one engine serving model. The caller routes Path to it; it does not look
// at the URL.
//
//   - GET (and HEAD) answers 200 {"thresholds":[{"model":…, the three
//     fields}]}, unset fields as null.
//   - POST takes {"model"?, the three fields?} and overwrites only the
//     fields present and not null (Store.Update), then answers 200 with
//     the one object. A body with no threshold is a read. slotgate serves
//     one engine, so any model name is accepted and echoed; an absent or
//     empty one echoes model. Dynamo answers 404 for a model it has not
//     discovered; here there is nothing else to find.
//   - A body that is not a JSON object of these keys answers 422: invalid
//     JSON, a key of another name (keys are case-sensitive), a model that is
//     not a string, a threshold that is not a number. A number out of its
//     field's range answers 400, naming every such field: a fraction outside
//     its range, a number beyond float64, a token count that is negative,
//     fractional or beyond uint64. (Dynamo ignores unknown keys, and its u64
//     deserializer makes a bad token count a 422.)
//   - A body over MaxBodyBytes answers 413, any other method 405 with an
//     Allow header. The request's Content-Type is not checked.
//   - Every error body is Dynamo's {"error":"<message>"}, and every answer is
//     application/json. A refused request changes nothing.
//
// Each change is logged through logf with the old and new thresholds; a
// nil logf logs nothing. NewHandler panics when s is nil.
func NewHandler(s *Store, model string, logf func(msg string, kv ...any)) http.Handler {
	if s == nil {
		panic("busy: NewHandler with a nil Store")
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &handler{store: s, model: model, logf: logf}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		list := []thresholdsJSON{h.object(h.model, h.store.Load())}
		writeJSON(w, http.StatusOK, struct {
			Thresholds []thresholdsJSON `json:"thresholds"`
		}{list})
	case http.MethodPost:
		h.post(w, r)
	default:
		w.Header().Set("Allow", allowedMethods)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use %s", r.Method, allowedMethods))
	}
}

func (h *handler) post(w http.ResponseWriter, r *http.Request) {
	body, rerr := readBody(w, r)
	if rerr != nil {
		writeError(w, rerr.status, rerr.msg)
		return
	}
	req, rerr := parseRequest(body)
	if rerr != nil {
		writeError(w, rerr.status, rerr.msg)
		return
	}
	h.apply(w, req)
}

// apply updates the store with a parsed request and answers.
func (h *handler) apply(w http.ResponseWriter, req request) {
	model := req.model
	if model == "" {
		model = h.model
	}
	old, now, err := h.store.update(req.patch)
	if err != nil {
		// parseRequest validated the patch, and the store holds valid
		// values, so the merge is valid; kept in case that ever changes.
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !old.equal(now) {
		h.logf("busy thresholds changed", "model", model, "old", old.String(), "new", now.String())
	}
	writeJSON(w, http.StatusOK, h.object(model, now))
}

func (h *handler) object(model string, t Thresholds) thresholdsJSON {
	return thresholdsJSON{
		Model:                   model,
		ActiveDecodeBlocks:      t.ActiveDecodeBlocks,
		ActivePrefillTokens:     t.ActivePrefillTokens,
		ActivePrefillTokensFrac: t.ActivePrefillTokensFrac,
	}
}

// readBody reads at most MaxBodyBytes: the API takes three numbers, and an
// admin port is no reason to buffer whatever a client sends.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *requestError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &requestError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body larger than %d bytes", MaxBodyBytes)}
	case err != nil:
		return nil, &requestError{status: http.StatusBadRequest, msg: "read request body: " + err.Error()}
	}
	return body, nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// writeJSON answers v. It cannot fail to encode: the values are strings
// and finite numbers (the store holds only valid thresholds).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
