package admission

import (
	"context"
	"errors"
	"fmt"
)

// Classifier decides each request's admission.
type Classifier interface {
	// Classify admits r by returning nil, possibly after changing its
	// decisions; defers it by blocking until it may go on (it must return
	// ctx.Err() when ctx ends); or rejects it by returning an error, best
	// a *Rejection.
	Classify(ctx context.Context, r *Request) error
	// OnEvent receives each admitted request's lifecycle, in order, on the
	// request's goroutine: it must be short and must not block.
	OnEvent(e Event)
}

// HeaderReader is implemented by a classifier that reads request headers
// (Request.Header): slotgate captures the headers it names, lower-case,
// in addition to the configured ones.
type HeaderReader interface {
	Headers() []string
}

// EventKind is a step of a request's lifecycle.
type EventKind uint8

// The lifecycle, in order: Sent, Responding, then Completed or Aborted.
const (
	// Sent: the request left the queue and is being sent to the engine.
	Sent EventKind = iota + 1
	// Responding: the engine's first response byte arrived.
	Responding
	// Completed: the response ended normally.
	Completed
	// Aborted: the request was refused after Classify admitted it (queue
	// full or timed out), its client left, or the engine failed.
	Aborted
)

func (k EventKind) String() string {
	switch k {
	case Sent:
		return "sent"
	case Responding:
		return "responding"
	case Completed:
		return "completed"
	case Aborted:
		return "aborted"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// AbortReason says why a request was aborted.
type AbortReason uint8

// The reasons of an Aborted event.
const (
	// NotAborted is the reason of the other events.
	NotAborted AbortReason = iota
	// AbortRejected: refused after classification (queue full or timed
	// out, a body too large or unreadable, a class that is not configured).
	AbortRejected
	// AbortCancelled: the client left.
	AbortCancelled
	// AbortFailed: the engine failed.
	AbortFailed
)

func (a AbortReason) String() string {
	switch a {
	case NotAborted:
		return ""
	case AbortRejected:
		return "rejected"
	case AbortCancelled:
		return "cancelled"
	case AbortFailed:
		return "failed"
	}
	return fmt.Sprintf("AbortReason(%d)", uint8(a))
}

// Event is one step of a request's lifecycle.
type Event struct {
	Kind    EventKind
	Request *Request
	// Reason is set on Aborted events.
	Reason AbortReason
	// ContextTokens is the request's final context size (input plus
	// generated tokens) on Completed, when known; 0 otherwise.
	ContextTokens int
}

// RejectKind is the kind of a Rejection, which decides the answer.
type RejectKind uint8

// The kinds of rejection.
const (
	// CapacityExhausted: the overload status (529 by default, or
	// DYN_HTTP_OVERLOAD_STATUS_CODE); gRPC RESOURCE_EXHAUSTED.
	CapacityExhausted RejectKind = iota + 1
	// RateLimited: 429, for caller-specific limits; gRPC
	// RESOURCE_EXHAUSTED.
	RateLimited
)

// Rejection is a classifier's intentional refusal. Message is sent to the
// client; it must not reveal anything private.
type Rejection struct {
	Kind    RejectKind
	Message string
}

func (r *Rejection) Error() string { return r.Message }

// Reject returns a Rejection of kind with a message to the client.
func Reject(kind RejectKind, message string) error {
	return &Rejection{Kind: kind, Message: message}
}

// AsRejection returns the Rejection err carries, or a CapacityExhausted
// one with a generic message for any other error, which is not shown to
// the client (it may carry internal detail).
func AsRejection(err error) *Rejection {
	var r *Rejection
	if errors.As(err, &r) && (r.Kind == CapacityExhausted || r.Kind == RateLimited) {
		if r.Message == "" { // the client gets a message whatever the classifier said
			return &Rejection{Kind: r.Kind, Message: defaultMessage[r.Kind]}
		}
		return r
	}
	return &Rejection{Kind: CapacityExhausted, Message: "Server overloaded: request rejected by admission policy"}
}

// defaultMessage answers a Rejection that came without a message.
var defaultMessage = map[RejectKind]string{
	CapacityExhausted: "Server overloaded: request rejected by admission policy",
	RateLimited:       "Too many requests: rate limited by admission policy",
}

// PassThrough admits every request unchanged and ignores events: the
// behaviour without a classifier.
type PassThrough struct{}

// Classify admits r.
func (PassThrough) Classify(context.Context, *Request) error { return nil }

// OnEvent ignores e.
func (PassThrough) OnEvent(Event) {}
