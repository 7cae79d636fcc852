package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/gate"
)

// StatusClientClosedRequest is logged for requests whose client left before
// the answer; the client never sees it (nginx's 499).
const StatusClientClosedRequest = 499

// ReasonHeader carries a machine-readable reason on every answer slotgate
// gives itself, so routers need not parse bodies.
const ReasonHeader = "X-Slotgate-Reason"

// answer is one pre-rendered error response.
type answer struct {
	status     int
	reason     string
	body       []byte
	retryAfter string // empty: no Retry-After header
	// paced: an overload answer, whose Retry-After is the gate's paced
	// hint when the gate paces it (gate.Gate.RetryAfter), else retryAfter.
	paced bool
	// The header values, rendered once. net/http copies the values of a
	// handler's headers when it sends them, so they are never written to.
	reasonV, lengthV, retryAfterV []string
	// statusLine is net/http's HTTP/1.1 status line, for the early
	// refusals (refuseHead).
	statusLine string
}

// errorBody is OpenAI's error shape.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func newAnswer(status int, typ, message, reason, retryAfter string) answer {
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = message, typ, status
	body, err := json.Marshal(b)
	if err != nil {
		panic("proxy: marshal error body: " + err.Error()) // fixed shape: cannot fail
	}
	body = append(body, '\n')
	a := answer{status: status, reason: reason, body: body, retryAfter: retryAfter,
		reasonV: []string{reason}, lengthV: []string{strconv.Itoa(len(body))}, statusLine: httpStatusLine(status)}
	if retryAfter != "" {
		a.retryAfterV = []string{retryAfter}
	}
	return a
}

// answers holds every answer, rendered once at start-up so that a rejection
// costs no encoding.
type answers struct {
	// overloadStatus and retryAfter render the answers of a classifier's
	// own messages, which are not known in advance.
	overloadStatus int
	retryAfter     string
	// retryValues holds the Retry-After values of paced hints, by
	// seconds, rendered once.
	retryValues [][]string

	capacity, queueTokens, queueTimeout, queueExpired, busy, policy, unreachable, draining, badGateway, gatewayTimeout, tooLarge, badRequest, bodyTimeout answer
}

func newAnswers(overload int, retryAfterSeconds int, maxBody int64) answers {
	ra := ""
	if retryAfterSeconds > 0 {
		ra = strconv.Itoa(retryAfterSeconds)
	}
	overloaded := func(message, reason string) answer {
		a := newAnswer(overload, "Overloaded", message, reason, ra)
		a.paced = true
		return a
	}
	return answers{
		overloadStatus: overload,
		retryAfter:     ra,
		retryValues:    retryValues(),
		policy:         overloaded(gate.MessagePolicy, "policy"),
		capacity:       overloaded(gate.MessageCapacity, "capacity"),
		queueTokens:    overloaded(gate.MessageQueueTokens, "queue_tokens"),
		queueTimeout:   overloaded(gate.MessageQueueTimeout, "queue_timeout"),
		queueExpired:   overloaded(gate.MessageQueueTimeout, "queue_timeout"),
		busy:           overloaded(gate.MessageBusy, "busy"),
		unreachable:    newAnswer(http.StatusServiceUnavailable, "Unavailable", gate.MessageUnreachable, "engine_unavailable", ""),
		draining:       newAnswer(http.StatusServiceUnavailable, "Unavailable", gate.MessageDraining, "draining", ra),
		badGateway:     newAnswer(http.StatusBadGateway, "EngineError", "Bad gateway: engine error", "engine_error", ""),
		gatewayTimeout: newAnswer(http.StatusGatewayTimeout, "EngineError", "Gateway timeout: engine did not answer", "engine_error", ""),
		badRequest: newAnswer(http.StatusBadRequest, "invalid_request_error",
			"Request body could not be read", "bad_request", ""),
		bodyTimeout: newAnswer(http.StatusRequestTimeout, "invalid_request_error",
			"Request body did not arrive in time", "body_timeout", ""),
		tooLarge: newAnswer(http.StatusRequestEntityTooLarge, "invalid_request_error",
			"Request body larger than "+strconv.FormatInt(maxBody, 10)+" bytes", "too_large", ""),
	}
}

// retryValues renders every paced hint's header value, 0 through
// gate.MaxRetryAfter seconds.
func retryValues() [][]string {
	vs := make([][]string, int(gate.MaxRetryAfter/time.Second)+1)
	for i := range vs {
		vs[i] = []string{strconv.Itoa(i)}
	}
	return vs
}

// write sends a, with the request's id so that a client can quote it.
//
// Before it sends the status line of an HTTP/1.x answer, net/http reads and
// discards up to 256 KiB of an unread request body, to keep the connection.
// A small declared body is already here (clients send it with the headers),
// so that costs nothing and the refused client keeps its connection, which
// matters under an overload storm: reconnecting for every retry costs a
// handshake and a port in TIME_WAIT. But a refusal must not wait for a body
// that may not come (chunked, large, or a read cut short): then the answer
// closes the connection instead (exchange.bodyPending).
func (a *answer) write(ex *exchange) {
	h := ex.out.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = a.lengthV
	h[ReasonHeader] = a.reasonV
	h[requestIDHeader] = []string{ex.ID}
	if v := a.retryAfterValue(ex.p); v != nil {
		h["Retry-After"] = v
	}
	if ex.bodyPending {
		h["Connection"] = connectionClose
	}
	ex.out.WriteHeader(a.status)
	_, _ = ex.out.Write(a.body) // the client may be gone; nothing to do about it
}

// retryAfterValue is a's Retry-After: the gate's paced hint for an
// overload answer when the gate paces it, else the fixed one; nil for none.
func (a *answer) retryAfterValue(p *Proxy) []string {
	if a.paced {
		if d := p.gate.RetryAfter(); d > 0 {
			return p.answers.retryValues[min(int(d/time.Second), len(p.answers.retryValues)-1)]
		}
	}
	return a.retryAfterV
}

var (
	contentTypeJSON = []string{"application/json"}
	connectionClose = []string{"close"}
)

// rendered renders an answer with a classifier's own message, with
// Retry-After like the other overload answers.
func (a *answers) rendered(status int, typ, message, reason string, paced bool) answer {
	r := newAnswer(status, typ, message, reason, a.retryAfter)
	r.paced = paced
	return r
}

// refuse answers a request the gate refused, with the answer of its
// outcome (answers.of, the one place where a refusal becomes an HTTP
// status, for the early refusals too). A client that left gets no answer, only
// nginx's 499 in the access log.
func (p *Proxy) refuse(ex *exchange, d gate.Decision) {
	if ex.Outcome == gate.CancelledQueued {
		ex.out.status = StatusClientClosedRequest
		return
	}
	p.answers.of(ex.Outcome, d.Message).write(ex)
}

// of is the answer to a refusal of outcome o; message is the
// classifier's own, for rejected_policy, rejected_rate_limited and
// rejected_bad_request, or empty.
func (a *answers) of(o gate.Outcome, message string) *answer {
	var ans *answer
	switch o {
	case gate.RejectedRateLimited:
		r := a.rendered(http.StatusTooManyRequests, "RateLimited", message, "rate_limited", false)
		ans = &r
	case gate.RejectedPolicy:
		ans = &a.policy
		if message != "" {
			r := a.rendered(a.overloadStatus, "Overloaded", message, "policy", true)
			ans = &r
		}
	case gate.RejectedCapacity:
		ans = &a.capacity
	case gate.RejectedQueueTokens:
		ans = &a.queueTokens
	case gate.RejectedQueueTimeout:
		ans = &a.queueTimeout
	case gate.RejectedQueueExpired:
		ans = &a.queueExpired
	case gate.RejectedBusy:
		ans = &a.busy
	case gate.RejectedDraining:
		ans = &a.draining
	case gate.RejectedTooLarge:
		ans = &a.tooLarge
	case gate.RejectedBodyTimeout:
		ans = &a.bodyTimeout
	case gate.EngineError:
		// The gate's refusal of a parked request whose resumption
		// panicked (gate.recoverParked): slotgate failed it, not the
		// client.
		ans = &a.badGateway
	default: // gate.RejectedBadRequest
		ans = &a.badRequest
		if message != "" {
			r := a.rendered(http.StatusBadRequest, "invalid_request_error", message, "bad_request", false)
			ans = &r
		}
	}
	return ans
}
