package grpcproxy

import (
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/gate"
)

// Messages of the refusals that only gRPC has; the others are the
// gate's (gate.MessageCapacity and the like), shared with the HTTP proxy.
const (
	MessageBadRequest = "Request could not be read"
	MessageTooLarge   = "Request message too large"
)

// refusal is how one refusal outcome is answered.
type refusal struct {
	code    codes.Code
	message string // the default; a classifier's own message replaces it
	reason  string // ReasonKey, as HTTP's X-Slotgate-Reason
	retry   bool   // with RetryAfterKey
	// paced: an overload refusal, whose retry-after is the gate's paced
	// hint when the gate paces it, as over HTTP.
	paced bool
}

// refusals maps each refusal outcome to its status: the one place where a
// refusal becomes a gRPC code (RESOURCE_EXHAUSTED for overload, as
// style.md's table; UNAVAILABLE for draining).
var refusals = map[gate.Outcome]refusal{
	gate.RejectedCapacity:     {codes.ResourceExhausted, gate.MessageCapacity, "capacity", true, true},
	gate.RejectedQueueTokens:  {codes.ResourceExhausted, gate.MessageQueueTokens, "queue_tokens", true, true},
	gate.RejectedQueueTimeout: {codes.ResourceExhausted, gate.MessageQueueTimeout, "queue_timeout", true, true},
	gate.RejectedQueueExpired: {codes.ResourceExhausted, gate.MessageQueueTimeout, "queue_timeout", true, true},
	gate.RejectedPolicy:       {codes.ResourceExhausted, gate.MessagePolicy, "policy", true, true},
	gate.RejectedRateLimited:  {codes.ResourceExhausted, gate.MessagePolicy, "rate_limited", true, false},
	gate.RejectedBusy:         {codes.ResourceExhausted, gate.MessageBusy, "busy", true, true},
	gate.RejectedDraining:     {codes.Unavailable, gate.MessageDraining, "draining", true, false},
	gate.RejectedTooLarge:     {codes.ResourceExhausted, MessageTooLarge, "too_large", false, false},
	gate.RejectedBadRequest:   {codes.InvalidArgument, MessageBadRequest, "bad_request", false, false},
}

// refuse answers a call the gate refused, before anything reached the
// engine: a status and its trailers, nothing else. A client that left
// (cancelled_queued) gets its context's status, which it never sees.
func (p *Proxy) refuse(c *call, d gate.Decision) error {
	if c.Outcome == gate.CancelledQueued {
		if err := c.ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		return status.Error(codes.Canceled, "client cancelled while queued")
	}
	r, ok := refusals[c.Outcome]
	if !ok {
		r = refusals[gate.RejectedBadRequest] // as over HTTP: anything else is the request's fault
	}
	msg := r.message
	if d.Message != "" {
		msg = d.Message
	}
	tr := metadata.Pairs(ReasonKey, r.reason, RequestIDKey, c.ID)
	if v := p.retryAfterOf(r); v != "" {
		tr.Set(RetryAfterKey, v)
	}
	c.ss.SetTrailer(tr)
	return status.Error(r.code, msg)
}

// retryAfterOf is the retry-after of a refusal r: the gate's paced hint,
// in whole seconds, for an overload refusal when the gate paces it, else
// the fixed one (Options.RetryAfter); "" for none.
func (p *Proxy) retryAfterOf(r refusal) string {
	if !r.retry {
		return ""
	}
	if r.paced {
		if d := p.gate.RetryAfter(); d > 0 {
			return strconv.Itoa(int(d / time.Second))
		}
	}
	return p.retryAfter
}
