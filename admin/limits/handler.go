package limits

import (
	"net/http"

	"github.com/slotgate/slotgate/internal/jsonapi"
	"github.com/slotgate/slotgate/limiter"
)

// Path is where the admin port serves the API; mount the handler there.
const Path = "/limits"

// MaxBodyBytes bounds a POST body: the API takes five numbers, and an
// admin port is no reason to buffer whatever a client sends. A larger body
// is refused with 413 before it is parsed.
const MaxBodyBytes = 64 << 10

// allowedMethods answers a 405. HEAD is GET without the body, which
// net/http drops by itself.
const allowedMethods = "GET, HEAD, POST"

// gateOffMsg answers a change asked of a gate that is off.
const gateOffMsg = "the admission gate is off: slotgate was started with no engine limit, so there are no limits to change; " +
	"set them at start with --engine-request-limit or --engine-request-waiting-limit"

// Gate is the admission gate's limits, as *gate.Limiters holds them: one
// set for the engine, or the same set for each data-parallel rank.
type Gate interface {
	// Limits returns the limits in force (each rank's, with limits per
	// rank); all zero when the gate is off.
	Limits() limiter.Limits
	// SetLimits calls f once with the limits in force and puts what it
	// returns in force, in one step that no other change interleaves, and
	// returns the limits before and after. It fails, changing nothing,
	// when the gate is off or f's limits are invalid.
	SetLimits(f func(limiter.Limits) limiter.Limits) (old, now limiter.Limits, err error)
	// PerRank reports whether each data-parallel rank has its own limits.
	PerRank() bool
}

// Options configure the handler.
type Options struct {
	// Limits is the gate whose limits the handler reads and changes.
	// Required.
	Limits Gate
	// Changed, when set, is called after each change that alters a value,
	// once the new limits are in force, by the goroutine serving the POST:
	// concurrent POSTs may call it at once, so it must be safe for that,
	// and it should not block.
	Changed func()
	// Logf logs each change, with the old and new values of all five
	// limits; nil logs nothing. Its kv are alternating keys and values, as
	// zap's SugaredLogger.Infow takes them.
	Logf func(msg string, kv ...any)
}

// limitsJSON is the answer to a GET and to a successful POST: every field
// present, an unset limit as null. It always encodes: its values are
// strings, integers and booleans.
type limitsJSON struct {
	EngineRequestLimit        *int   `json:"engine_request_limit"`
	EngineRequestWaitingLimit *int   `json:"engine_request_waiting_limit"`
	RequestQueueLimit         *int   `json:"request_queue_limit"`
	EnginePrefillTokenLimit   *int64 `json:"engine_prefill_token_limit"`
	RequestQueueTokenLimit    *int64 `json:"request_queue_token_limit"`
	PerRank                   bool   `json:"per_rank"`
	Gate                      string `json:"gate"`
}

type handler struct {
	gate    Gate
	changed func()
	logf    func(msg string, kv ...any)
}

// NewHandler returns the handler of the /limits admin API. The caller
// routes Path to it; it does not look at the URL.
//
//   - GET (and HEAD) answers 200 {"engine_request_limit": N,
//     "engine_request_waiting_limit": W, "request_queue_limit": Q,
//     "engine_prefill_token_limit": P, "request_queue_token_limit": T,
//     "per_rank": bool, "gate": "on"}, an unset N, W, P or T as null. P
//     bounds the prompt tokens of the admitted requests before their first
//     token, T those of the queued requests. With per-rank limits the
//     values are each rank's. When the gate is off (a pass-through:
//     neither engine limit was set at start) it answers 200 with all five
//     limits null, "per_rank": false and "gate": "off".
//   - POST takes a JSON object with any of the five limit keys and applies
//     only those given, merged into the limits in force in one step, then
//     answers 200 with the new limits in the GET shape. An empty object is
//     a read, whether the gate is on or off. N and W take an integer of at
//     least 1, or null to unset that limit, which is allowed only while the
//     other engine limit stays set; Q takes an integer of at least 0 and
//     cannot be null; N, W and Q are at most MaxLimit. P and T take an
//     integer from 0 to MaxTokenLimit (2^62, the flags' bound), or null: 0
//     and null both unset the limit, as 0 does for the flags, and a GET
//     shows it as null. Numbers must be written as integers: 2.0 and 2e0
//     are refused, as Dynamo's usize fields refuse them.
//   - A body that is not a JSON object of these keys answers 422: invalid
//     JSON, a key of another name (keys are case-sensitive), a value that
//     is not a number (or null, for all but Q). A number out of its
//     field's range, a null Q, or a change that would leave neither engine
//     limit set answers 400, naming every such field and value.
//   - A well-formed change while the gate is off answers 409: a gate off
//     has no limiter to change, and limits must be set at start. The body
//     is checked first, so a bad body is a 422 or 400 even then.
//   - A body over MaxBodyBytes answers 413, any other method 405 with an
//     Allow header. The request's Content-Type is not checked.
//   - Every error body is {"error":"<message>"}, and every answer is
//     application/json. A refused request changes nothing.
//
// A change takes effect at once. Raising a limit admits waiters at once,
// in the order a release would. Lowering one never takes back a held
// place: requests admitted above a lowered N, W or P finish normally, and
// the excess drains as they do (for P, as they reach their first token),
// their places not handed on until the count is under the new limit;
// waiters beyond a lowered Q or queue token limit stay queued while new
// arrivals are refused. With per-rank limits, the change applies to every
// rank alike.
//
// Each change that alters a value is logged through Logf as "admission
// limits changed" with old_ and new_ engine_request_limit,
// engine_request_waiting_limit and request_queue_limit (an int, nil for an
// unset N or W), engine_prefill_token_limit and request_queue_token_limit
// (an int64, or nil when unset), and per_rank, then reported through
// Changed. NewHandler panics when opts.Limits is nil.
func NewHandler(opts Options) http.Handler {
	if opts.Limits == nil {
		panic("limits: NewHandler with nil Options.Limits")
	}
	h := &handler{gate: opts.Limits, changed: opts.Changed, logf: opts.Logf}
	if h.changed == nil {
		h.changed = func() {}
	}
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		jsonapi.WriteJSON(w, http.StatusOK, h.object(h.gate.Limits()))
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
	p, rerr := parseRequest(body)
	if rerr != nil {
		jsonapi.WriteError(w, rerr.Status, rerr.Message)
		return
	}
	if p.empty() {
		jsonapi.WriteJSON(w, http.StatusOK, h.object(h.gate.Limits()))
		return
	}
	h.apply(w, p)
}

// apply merges p into the limits in force and answers.
func (h *handler) apply(w http.ResponseWriter, p patch) {
	if isOff(h.gate.Limits()) {
		jsonapi.WriteError(w, http.StatusConflict, gateOffMsg)
		return
	}
	// The merge, and the check that depends on the limits in force, run
	// inside SetLimits, so that no concurrent change slips in between the
	// read and the write. A refused merge puts the old limits back in
	// force, which changes nothing.
	var off, unsetsBoth bool
	old, now, err := h.gate.SetLimits(func(old limiter.Limits) limiter.Limits {
		off = isOff(old)
		merged := p.apply(old)
		unsetsBoth = merged.Slots == 0 && merged.WaitingLimit == 0
		if off || unsetsBoth {
			return old
		}
		return merged
	})
	switch {
	case off:
		jsonapi.WriteError(w, http.StatusConflict, gateOffMsg)
		return
	case unsetsBoth:
		jsonapi.WriteError(w, http.StatusBadRequest, stayLimitedMsg)
		return
	case err != nil:
		// parseRequest and the merge check let only valid limits through,
		// so this is the gate failing; kept in case that ever happens.
		jsonapi.WriteError(w, http.StatusInternalServerError, "cannot change the limits: "+err.Error())
		return
	}
	if old != now {
		h.logChange(old, now)
		h.changed()
	}
	jsonapi.WriteJSON(w, http.StatusOK, h.object(now))
}

// logChange logs a change from old to now, each limit old and new.
func (h *handler) logChange(old, now limiter.Limits) {
	h.logf("admission limits changed",
		"old_"+fieldSlots, logValue(old.Slots), "new_"+fieldSlots, logValue(now.Slots),
		"old_"+fieldWaiting, logValue(old.WaitingLimit), "new_"+fieldWaiting, logValue(now.WaitingLimit),
		"old_"+fieldQueue, old.QueueLen, "new_"+fieldQueue, now.QueueLen,
		"old_"+fieldPrefillTokens, logValue(old.PrefillTokenLimit), "new_"+fieldPrefillTokens, logValue(now.PrefillTokenLimit),
		"old_"+fieldQueueTokens, logValue(old.QueueTokenLimit), "new_"+fieldQueueTokens, logValue(now.QueueTokenLimit),
		"per_rank", h.gate.PerRank())
}

// isOff reports the limits of a gate that is off: neither N nor W set. A
// gate that is on always has one of them (the limiter refuses limits
// without), and one that is off has every limit zero; only N and W are
// looked at, so that the test does not lean on the other fields, token
// limits included, being zero.
func isOff(l limiter.Limits) bool { return l.Slots == 0 && l.WaitingLimit == 0 }

func (h *handler) object(l limiter.Limits) limitsJSON {
	if isOff(l) {
		return limitsJSON{Gate: "off"}
	}
	q := l.QueueLen
	return limitsJSON{
		EngineRequestLimit:        optional(l.Slots),
		EngineRequestWaitingLimit: optional(l.WaitingLimit),
		RequestQueueLimit:         &q,
		EnginePrefillTokenLimit:   optional(l.PrefillTokenLimit),
		RequestQueueTokenLimit:    optional(l.QueueTokenLimit),
		PerRank:                   h.gate.PerRank(),
		Gate:                      "on",
	}
}

// optional is an engine or token limit as JSON: nil (null) when unset.
func optional[T int | int64](n T) *T {
	if n == 0 {
		return nil
	}
	return &n
}

// logValue is an engine or token limit as logged: nil when unset.
func logValue[T int | int64](n T) any {
	if n == 0 {
		return nil
	}
	return n
}
