package limits

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/internal/jsonapi"
	"github.com/slotgate/slotgate/limiter"
)

// The API's keys: Dynamo's names of N, W and Q, and the names of
// slotgate's flags for the token limits (P and the queue's).
const (
	fieldSlots         = "engine_request_limit"
	fieldWaiting       = "engine_request_waiting_limit"
	fieldQueue         = "request_queue_limit"
	fieldPrefillTokens = "engine_prefill_token_limit"
	fieldQueueTokens   = "request_queue_token_limit"
)

// MaxLimit is the largest value a POST may give N, W or Q. The limiter
// stores an unset limit as math.MaxInt, so that value would read back as
// unset.
const MaxLimit = math.MaxInt - 1

// MaxTokenLimit is the largest value a POST may give a token limit: 2^62,
// the bound that --engine-prefill-token-limit and
// --request-queue-token-limit take at start, so that a limit one of them
// can set a POST can set too, and the other way round. The limiter keeps
// math.MaxInt64 for an unset token limit.
const MaxTokenLimit int64 = 1 << 62

// stayLimitedMsg refuses a change that would leave neither engine limit
// set: that is a gate off, which only a restart can make.
const stayLimitedMsg = "at least one engine limit must stay set: " +
	fieldSlots + " and " + fieldWaiting + " cannot both be null"

// value is one limit of a POST body.
type value struct {
	given bool  // the key is in the body
	n     int64 // the new limit; 0 unsets N, W or a token limit (null)
}

// patch is a parsed POST body: the limits it changes.
type patch struct {
	slots, waiting, queue      value
	prefillTokens, queueTokens value
}

func (p patch) empty() bool {
	return !p.slots.given && !p.waiting.given && !p.queue.given && !p.prefillTokens.given && !p.queueTokens.given
}

// apply returns l with the limits p gives. N, W and Q fit an int: they
// were parsed no larger than MaxLimit.
func (p patch) apply(l limiter.Limits) limiter.Limits {
	if p.slots.given {
		l.Slots = int(p.slots.n)
	}
	if p.waiting.given {
		l.WaitingLimit = int(p.waiting.n)
	}
	if p.queue.given {
		l.QueueLen = int(p.queue.n)
	}
	if p.prefillTokens.given {
		l.PrefillTokenLimit = p.prefillTokens.n
	}
	if p.queueTokens.given {
		l.QueueTokenLimit = p.queueTokens.n
	}
	return l
}

// parseRequest parses a POST body: one JSON object whose keys are the
// five limits, each optional. Keys are matched exactly, unlike
// encoding/json's struct decoding, which also takes "ENGINE_REQUEST_LIMIT".
//
// A body that is not such an object, a key that is none of these or a
// value that is not a number (nor null, for all but Q) is a 422. A number
// outside its field's range, a null Q, or N and W both null is a 400 that
// lists every such problem. A token limit of 0 and a null one both unset
// it, as 0 does for the flags.
func parseRequest(body []byte) (patch, *jsonapi.Error) {
	fields, jerr := jsonapi.DecodeObject(body, fieldSlots, fieldWaiting, fieldQueue, fieldPrefillTokens, fieldQueueTokens)
	if jerr != nil {
		return patch{}, jerr
	}
	var p problems
	req := patch{
		slots:         p.limit(fields, fieldSlots, 1, MaxLimit, true),
		waiting:       p.limit(fields, fieldWaiting, 1, MaxLimit, true),
		queue:         p.limit(fields, fieldQueue, 0, MaxLimit, false),
		prefillTokens: p.limit(fields, fieldPrefillTokens, 0, MaxTokenLimit, true),
		queueTokens:   p.limit(fields, fieldQueueTokens, 0, MaxTokenLimit, true),
	}
	if req.slots.given && req.slots.n == 0 && req.waiting.given && req.waiting.n == 0 {
		p.rng = append(p.rng, stayLimitedMsg)
	}
	if len(p.kind) > 0 {
		return patch{}, jsonapi.Unprocessable("%s", strings.Join(p.kind, "; "))
	}
	if len(p.rng) > 0 {
		return patch{}, &jsonapi.Error{Status: http.StatusBadRequest, Message: strings.Join(p.rng, "; ")}
	}
	return req, nil
}

// problems collects what is wrong with the fields, so that one answer
// names them all.
type problems struct {
	kind []string // a value that is not a number: the body is a 422
	rng  []string // a number out of its field's range, or a null Q: a 400
}

// limit parses one field: an integer from least to most, or, when
// nullable, null for unset. Only a plain integer fits, as in Dynamo's
// usize fields: 1.0 and 1e3 do not.
func (p *problems) limit(fields map[string]json.RawMessage, name string, least, most int64, nullable bool) value {
	raw, ok := fields[name]
	if !ok {
		return value{}
	}
	// The raw values come from a body that parsed, so they are trimmed
	// and valid JSON.
	if string(raw) == "null" {
		if nullable {
			return value{given: true}
		}
		p.rng = append(p.rng, fmt.Sprintf("%s cannot be unset: must be an integer between %d and %d, got null",
			name, least, most))
		return value{}
	}
	want := "an integer"
	if nullable {
		want = "an integer or null"
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		p.kind = append(p.kind, fmt.Sprintf("%s must be %s, got %s", name, want, jsonapi.Clip(raw)))
		return value{}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < least || n > most {
		p.rng = append(p.rng, fmt.Sprintf("%s must be an integer between %d and %d, got %s",
			name, least, most, jsonapi.Clip(raw)))
		return value{}
	}
	return value{given: true, n: n}
}
