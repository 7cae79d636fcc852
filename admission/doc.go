// Package admission is slotgate's request-classifier plugin API, the
// worker-side counterpart of Dynamo's experimental RequestClassifier: Go
// code that runs before a request is queued and decides to admit it,
// defer it (by blocking until capacity or a session is ready), or reject
// it; that can give it a policy class, a queue deadline, a scheduling
// cost and a hint; and that sees each request's lifecycle.
//
// A Classifier is made by a Factory, which a Provider returns after
// validating its parameters; providers are registered in a Registry by
// type name, and a configuration file (package admission/policy) selects
// one. Built-in classifiers are in package admission/builtin.
//
// Invariants:
//
//   - Classify runs once per request, before the request is queued, on
//     the request's goroutine; it must honour its context, which ends
//     when the client leaves.
//   - Events for one request are delivered in lifecycle order (Sent,
//     Responding, then one of Completed or Aborted; Aborted alone when the
//     request never reached the engine), each at most once, on the
//     request's goroutine, and carry the very *Request that Classify was
//     given. Every request that Classify admitted gets exactly one
//     Completed or Aborted; a request Classify rejected, or whose context
//     ended while it deferred, gets no event at all.
//   - Inputs.Ingress is never zero: the proxy stamps every request on
//     arrival.
//   - A Rejection decides the answer: CapacityExhausted is the overload
//     status (529 by default, DYN_HTTP_OVERLOAD_STATUS_CODE), RateLimited
//     is 429. Any other error from Classify is answered as
//     CapacityExhausted.
//
// The package imports only the standard library; it knows nothing of
// HTTP, the limiter or configuration files.
package admission
