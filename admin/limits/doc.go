// Package limits serves GET and POST /limits on the admin port: the
// admission gate's five limits, read and changed at run time without a
// restart, as HAProxy's stats socket and Envoy's runtime allow for their
// caps. Three are Dynamo's: engine_request_limit (N, admitted requests),
// engine_request_waiting_limit (W, admitted requests before their first
// token) and request_queue_limit (Q, queue places). Two bound prompt
// tokens, under the names of slotgate's flags:
// engine_prefill_token_limit (P, the tokens of the admitted requests
// before their first token) and request_queue_token_limit (the tokens of
// the queued requests).
//
// # Invariants
//
// Each is checked by the tests.
//
//   - The limits in force are always valid: N and W are each unset or at
//     least 1, at least one of them is set, and Q is at least 0; each token
//     limit is unset (0, shown as null) or from 1 to 2^62, the bound of
//     its flag. A POST never unsets both engine limits, and never sets a
//     limit, a token limit included, on a gate that is off (a
//     pass-through, started with neither engine limit).
//   - A POST is all or nothing: its keys are merged into the limits in
//     force inside one Gate.SetLimits call, so a concurrent change is
//     never lost, and a refused request changes nothing, logs nothing and
//     calls nothing.
//   - A POST changes only the limits it names; an empty object is a read.
//   - Lowering a limit never takes back an admitted request or a queued
//     one; raising one admits waiters at once. Both are the limiter's
//     guarantees (limiter.Limiter.SetLimits), which the handler passes on.
//   - Every answer is application/json: the limits object on success,
//     {"error": "..."} otherwise. Each change that alters a value is logged
//     once with the old and new values and reported once through Changed,
//     after it is in force.
//
// Concurrency: the handler is safe for concurrent use and keeps no state
// of its own; the Gate serialises changes. Nothing here starts a
// goroutine.
//
// The package imports only the standard library, the limiter's value
// types and internal/jsonapi, the JSON plumbing it shares with the
// /busy_threshold API: the gate it changes is an interface, Gate, which
// *gate.Limiters satisfies.
package limits
