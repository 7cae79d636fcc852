package gate

// Outcome is how one request ended; each admitted or refused request has
// exactly one. The values are Prometheus label values of
// slotgate_requests_total{outcome}.
type Outcome string

// The outcomes. Admitted requests that were served end as admitted_direct
// or admitted_queued whatever status the engine answered; those whose
// engine failed end as rejected_unavailable or engine_error, and those whose
// client left end as cancelled_running.
const (
	AdmittedDirect   Outcome = "admitted_direct"
	AdmittedQueued   Outcome = "admitted_queued"
	RejectedCapacity Outcome = "rejected_capacity"
	// RejectedQueueTimeout: the request's own deadline (its classifier's)
	// passed while it waited; RejectedQueueExpired: the queue delay
	// (--queue-timeout) did.
	RejectedQueueTimeout Outcome = "rejected_queue_timeout"
	RejectedQueueExpired Outcome = "rejected_queue_expired"
	// RejectedPolicy: refused by the admission policy's classifier
	// (capacity exhausted, or a class it chose that does not exist).
	RejectedPolicy Outcome = "rejected_policy"
	// RejectedRateLimited: refused by the classifier as rate limited.
	RejectedRateLimited Outcome = "rejected_rate_limited"
	// RejectedBusy: refused while the worker was busy (--reject-when-busy).
	RejectedBusy        Outcome = "rejected_busy"
	RejectedUnavailable Outcome = "rejected_unavailable"
	RejectedDraining    Outcome = "rejected_draining"
	RejectedTooLarge    Outcome = "rejected_too_large"
	// RejectedBadRequest: the request could not be read (a malformed
	// chunked body, a broken upload) while the client was still there.
	RejectedBadRequest Outcome = "rejected_bad_request"
	// RejectedBodyTimeout: the request's body did not arrive in time
	// (--request-body-timeout); its slot, if it had one, is handed on.
	RejectedBodyTimeout Outcome = "rejected_body_timeout"
	// RejectedQueueTokens: the prompt tokens of the waiting requests and
	// its own would pass the queue's token limit
	// (--request-queue-token-limit).
	RejectedQueueTokens Outcome = "rejected_queue_tokens"
	// CancelledQueued: the client left before its request reached the
	// engine (almost always while queued).
	CancelledQueued  Outcome = "cancelled_queued"
	CancelledRunning Outcome = "cancelled_running"
	EngineError      Outcome = "engine_error"
	// FirstTokenTimeout: the engine produced no first token within the
	// first-token budget (--first-token-timeout), so slotgate aborted the
	// engine request; retryable.
	FirstTokenTimeout Outcome = "first_token_timeout"
	// Passthrough marks engine probe paths, which take no slot. They are
	// logged but not reported to the Observer.
	Passthrough Outcome = "passthrough"
)

// Outcomes lists every outcome reported to an Observer, so that metrics can
// create each series at zero before the first request.
func Outcomes() []string {
	return []string{
		string(AdmittedDirect), string(AdmittedQueued), string(RejectedCapacity),
		string(RejectedQueueTimeout), string(RejectedQueueExpired), string(RejectedPolicy), string(RejectedRateLimited), string(RejectedBusy),
		string(RejectedUnavailable), string(RejectedDraining), string(RejectedTooLarge), string(RejectedBadRequest),
		string(RejectedBodyTimeout), string(RejectedQueueTokens),
		string(CancelledQueued), string(CancelledRunning), string(EngineError), string(FirstTokenTimeout),
	}
}

// Protocol is the protocol a request came by, set by its adapter. The
// values are Prometheus label values of slotgate_requests_total{protocol}.
type Protocol string

// The protocols of slotgate's adapters.
const (
	ProtocolHTTP Protocol = "http"
	ProtocolGRPC Protocol = "grpc"
)

// Protocols lists every protocol reported to an Observer, so that metrics
// can create each series at zero before the first request.
func Protocols() []string { return []string{string(ProtocolHTTP), string(ProtocolGRPC)} }

// served reports whether o is the outcome of a request the engine served.
func (o Outcome) served() bool { return o == AdmittedDirect || o == AdmittedQueued }

// Observer receives what the gate measures. Implementations must be safe
// for concurrent use and fast: they run on the request path.
type Observer interface {
	// RequestDone is called once per request that went through admission.
	// The outcome is one of Outcomes and the protocol one of Protocols
	// (the exchange's, as its adapter set it), as strings so that
	// implementations need not import this package; the class is the
	// request's policy class (DefaultClass without an admission policy).
	RequestDone(outcome, class, protocol string)
	// QueueWait is called once per request that was admitted (zero when it
	// took a free slot at once) or left the queue without a slot.
	QueueWait(class string, seconds float64)
	// FirstByte is called once per request served by the engine (outcome
	// admitted_direct or admitted_queued), with the time from arrival
	// (queue wait included) to the first byte of the response.
	FirstByte(seconds float64)
	// Received is called once per request that reaches the limiter, as it
	// arrives there; Decided follows when its admission is decided.
	Received()
	// Decided is called once per request that reached the limiter, when
	// its admission is decided: admitted_direct or admitted_queued when it
	// goes on to the engine, rejected_capacity, rejected_queue_timeout or
	// rejected_queue_expired when refused for capacity, and any other
	// outcome (cancelled_queued, rejected_too_large, rejected_bad_request)
	// when it left the queue otherwise. Dynamo 1.7's admission counters
	// are these decisions.
	Decided(outcome string)
}

type nopObserver struct{}

func (nopObserver) RequestDone(string, string, string) {}
func (nopObserver) QueueWait(string, float64)          {}
func (nopObserver) FirstByte(float64)                  {}
func (nopObserver) Received()                          {}
func (nopObserver) Decided(string)                     {}
