package admission

import (
	"sync/atomic"
	"time"
)

// Inputs are what the proxy knows of a request when it classifies it.
type Inputs struct {
	// ID is the request id (X-Request-Id), also used in events.
	ID string
	// Session is the session identity, from the configured session
	// header; empty when the request has none.
	Session string
	// Headers are the captured headers, by lower-case name; only those the
	// configuration lists.
	Headers map[string]string
	// InputTokens estimates the prompt; InputTokensKnown is false when
	// nothing was known before the body was read.
	InputTokens      int
	InputTokensKnown bool
	// PolicyClass is the class requested (the configuration's default).
	PolicyClass string
	// Ingress is when the request arrived.
	Ingress time.Time
}

// Request is one request as a classifier sees it: its inputs, and the
// decisions the classifier may change. A Request is used by one
// goroutine at a time, except ContextTokens, which may be read from any.
type Request struct {
	in Inputs

	class string
	dueAt time.Time
	cost  int
	hint  string

	contextTokens atomic.Int64
}

// NewRequest returns the Request for in, its decisions at their
// defaults: the requested class, no deadline, a scheduling cost of the
// input tokens (at least 1), no hint.
func NewRequest(in Inputs) *Request {
	return &Request{in: in, class: in.PolicyClass, cost: max(in.InputTokens, 1)}
}

// ID returns the request id.
func (r *Request) ID() string { return r.in.ID }

// Session returns the session identity, empty when none.
func (r *Request) Session() string { return r.in.Session }

// Header returns a captured header's value by lower-case name, and
// whether it was sent.
func (r *Request) Header(name string) (string, bool) {
	v, ok := r.in.Headers[name]
	return v, ok
}

// InputTokens returns the estimated prompt size and whether it is known.
func (r *Request) InputTokens() (int, bool) { return r.in.InputTokens, r.in.InputTokensKnown }

// IngressAt returns when the request arrived.
func (r *Request) IngressAt() time.Time { return r.in.Ingress }

// PolicyClass returns the policy class: the requested one, or the
// classifier's override.
func (r *Request) PolicyClass() string { return r.class }

// SetPolicyClass selects a configured policy class. A name the
// configuration does not define makes the request fail as rejected.
func (r *Request) SetPolicyClass(name string) { r.class = name }

// DueAt returns the queue deadline; zero means none.
func (r *Request) DueAt() time.Time { return r.dueAt }

// SetDueAt sets when the request stops waiting in the queue: past it, the
// request is refused with the queue-timeout answer. It does not bound the
// classifier's own wait, nor a running generation.
func (r *Request) SetDueAt(t time.Time) { r.dueAt = t }

// SchedulingCost returns the cost the fair queue charges the request's
// class: the input tokens by default (1 when the body's length was not
// declared, as with a chunked upload), or the classifier's override.
func (r *Request) SchedulingCost() int { return r.cost }

// SetSchedulingCost overrides the scheduling cost (at least 1).
func (r *Request) SetSchedulingCost(tokens int) { r.cost = max(tokens, 1) }

// Hint returns the classifier's hint, empty when none.
func (r *Request) Hint() string { return r.hint }

// SetHint records a free-form hint for load publishing (for example, a
// preferred data-parallel rank). slotgate does not act on it yet; it is
// here so classifiers written now keep working when it does.
func (r *Request) SetHint(h string) { r.hint = h }

// ContextTokens returns the live context size: input plus generated
// tokens so far, once the response streams (counted by slotgate's load
// tracking, which cmd/slotgate always runs).
func (r *Request) ContextTokens() int { return int(r.contextTokens.Load()) }

// SetContextTokens is called by the proxy as tokens stream.
func (r *Request) SetContextTokens(n int) { r.contextTokens.Store(int64(n)) }
