package fastplane

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/slotgate/slotgate/gate"
)

// The headers of slotgate's own answers, as the net/http path names them.
const (
	reasonHeader    = "X-Slotgate-Reason"
	requestIDHeader = "X-Request-Id"
)

// defaultOverloadStatus is Dynamo's overload status.
const defaultOverloadStatus = 529

// answer is one error response, rendered once.
type answer struct {
	status     int
	reason     string
	body       []byte
	retryAfter string // "": none
	paced      bool   // an overload answer: the gate's paced hint, when it paces
}

// errorBody is OpenAI's error shape, as the net/http path writes it.
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
		panic("fastplane: marshal error body: " + err.Error()) // fixed shape: cannot fail
	}
	return answer{status: status, reason: reason, body: append(body, '\n'), retryAfter: retryAfter}
}

// answers holds every answer the plane gives itself.
type answers struct {
	overloadStatus int
	retryAfter     string

	capacity, queueTokens, queueTimeout, busy, policy, draining                          answer
	unreachable, badGateway, gatewayTimeout, tooLarge, badRequest, connect, headTooLarge answer
}

func newAnswers(overload, retryAfterSeconds int, maxBody int64) answers {
	if overload == 0 {
		overload = defaultOverloadStatus
	}
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
		capacity:       overloaded(gate.MessageCapacity, "capacity"),
		queueTokens:    overloaded(gate.MessageQueueTokens, "queue_tokens"),
		queueTimeout:   overloaded(gate.MessageQueueTimeout, "queue_timeout"),
		busy:           overloaded(gate.MessageBusy, "busy"),
		policy:         overloaded(gate.MessagePolicy, "policy"),
		draining:       newAnswer(http.StatusServiceUnavailable, "Unavailable", gate.MessageDraining, "draining", ra),
		unreachable:    newAnswer(http.StatusServiceUnavailable, "Unavailable", gate.MessageUnreachable, "engine_unavailable", ""),
		badGateway:     newAnswer(http.StatusBadGateway, "EngineError", "Bad gateway: engine error", "engine_error", ""),
		gatewayTimeout: newAnswer(http.StatusGatewayTimeout, "EngineError", "Gateway timeout: engine did not answer", "engine_error", ""),
		badRequest: newAnswer(http.StatusBadRequest, "invalid_request_error",
			"Request body could not be read", "bad_request", ""),
		headTooLarge: newAnswer(http.StatusRequestHeaderFieldsTooLarge, "invalid_request_error",
			"Request header fields too large: at most "+strconv.Itoa(maxHead)+" bytes", "header_too_large", ""),
		connect: newAnswer(http.StatusMethodNotAllowed, "invalid_request_error",
			"Method CONNECT is not allowed: slotgate is not a forward proxy", "method_not_allowed", ""),
		tooLarge: newAnswer(http.StatusRequestEntityTooLarge, "invalid_request_error",
			"Request body larger than "+strconv.FormatInt(maxBody, 10)+" bytes", "too_large", ""),
	}
}

// write sends a on rc, with the request's id.
func (s *Server) write(rc *fasthttp.RequestCtx, a *answer, id string) {
	rc.Response.Reset()
	rc.SetStatusCode(a.status)
	h := &rc.Response.Header
	h.SetContentType("application/json")
	h.Set(reasonHeader, a.reason)
	if id != "" {
		h.Set(requestIDHeader, id)
	}
	if v := s.retryAfter(a); v != "" {
		h.Set("Retry-After", v)
	}
	rc.SetBody(a.body)
}

// retryAfter is a's Retry-After: the gate's paced hint for an overload
// answer when the gate paces, else the fixed one.
func (s *Server) retryAfter(a *answer) string {
	if a.paced {
		if d := s.gate.RetryAfter(); d > 0 {
			return strconv.Itoa(int(min(d, gate.MaxRetryAfter) / time.Second))
		}
	}
	return a.retryAfter
}

// refusal is the answer to a request the gate refused, nil for a client
// that left (it gets none). Classifier messages cannot occur: the plane
// runs without an admission policy.
func (a *answers) refusal(o gate.Outcome) *answer {
	switch o {
	case gate.CancelledQueued:
		return nil
	case gate.RejectedCapacity:
		return &a.capacity
	case gate.RejectedQueueTokens:
		return &a.queueTokens
	case gate.RejectedQueueTimeout, gate.RejectedQueueExpired:
		return &a.queueTimeout
	case gate.RejectedBusy:
		return &a.busy
	case gate.RejectedPolicy, gate.RejectedRateLimited:
		return &a.policy
	case gate.RejectedDraining:
		return &a.draining
	case gate.RejectedTooLarge:
		return &a.tooLarge
	}
	return &a.badRequest
}

// engineFailure is the answer to an engine that failed before its answer's
// head, and the outcome it gives the request.
func (a *answers) engineFailure(err error) (*answer, gate.Outcome) {
	var op *net.OpError
	switch {
	case errors.Is(err, fasthttp.ErrDialTimeout) || errors.As(err, &op) && op.Op == "dial":
		return &a.unreachable, gate.RejectedUnavailable
	case errors.Is(err, fasthttp.ErrTimeout):
		return &a.gatewayTimeout, gate.EngineError
	}
	return &a.badGateway, gate.EngineError
}

// badInput answers a request fasthttp could not read (the server's
// ErrorHandler): too large, or malformed. Such a request never reaches
// the gate, so it is not counted in the metrics.
func (s *Server) badInput(rc *fasthttp.RequestCtx, err error) {
	a := &s.answers.badRequest
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		a = &s.answers.tooLarge
	case errors.As(err, &small):
		a = &s.answers.headTooLarge
	case isTimeout(err):
		// A head or a body that did not arrive in time: the connection
		// is closed without an answer. The net/http plane answers a late
		// body 408, but fasthttp resets the request's head before it
		// calls this, so a late body cannot be told from a late head.
		_ = rc.Conn().Close()
		return
	}
	s.write(rc, a, "")
	rc.SetConnectionClose()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
