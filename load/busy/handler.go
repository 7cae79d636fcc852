package busy

import (
	"net/http"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

// Path is where Dynamo serves the API; mount the handler there.
const Path = "/busy_threshold"

// MaxBodyBytes bounds a POST body: the API takes three numbers, and an
// admin port is no reason to buffer whatever a client sends. A larger body
// is refused with 413 before it is parsed.
const MaxBodyBytes = 64 << 10

// allowedMethods answers a 405. HEAD is GET without the body, which
// net/http drops by itself.
const allowedMethods = "GET, HEAD, POST"

// thresholdsJSON is one model's thresholds in Dynamo's shape: every field
// present, null when the check is off. It always encodes: its values are
// strings and finite numbers (the store holds only valid thresholds).
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
		jsonapi.WriteJSON(w, http.StatusOK, struct {
			Thresholds []thresholdsJSON `json:"thresholds"`
		}{list})
	case http.MethodPost:
		h.post(w, r)
	default:
		jsonapi.MethodNotAllowed(w, r, allowedMethods)
	}
}

func (h *handler) post(w http.ResponseWriter, r *http.Request) {
	body, rerr := jsonapi.ReadBody(w, r, MaxBodyBytes)
	if rerr != nil {
		jsonapi.WriteError(w, rerr.Status, rerr.Message)
		return
	}
	req, rerr := parseRequest(body)
	if rerr != nil {
		jsonapi.WriteError(w, rerr.Status, rerr.Message)
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
		jsonapi.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !old.equal(now) {
		h.logf("busy thresholds changed", "model", model, "old", old.String(), "new", now.String())
	}
	jsonapi.WriteJSON(w, http.StatusOK, h.object(model, now))
}

func (h *handler) object(model string, t Thresholds) thresholdsJSON {
	return thresholdsJSON{
		Model:                   model,
		ActiveDecodeBlocks:      t.ActiveDecodeBlocks,
		ActivePrefillTokens:     t.ActivePrefillTokens,
		ActivePrefillTokensFrac: t.ActivePrefillTokensFrac,
	}
}
