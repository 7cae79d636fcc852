// Package builtin holds slotgate's built-in request classifiers and
// registers them in an admission.Registry:
//
//   - "pass-through": admits every request unchanged (the behaviour
//     without a classifier). Parameters: none (absent, null or {}).
//   - "queue-budget": Dynamo's example classifier. Parameter max_wait_ms
//     (required, 1..60000). A request whose budget, counted from its
//     ingress, is already spent is rejected as CapacityExhausted; any other
//     is admitted with its queue deadline (due_at) set to ingress plus the
//     budget.
//   - "session-gate": agentic sessions (Dynamo's ThunderAgent case).
//     Parameters max_active_per_session (required, at least 1),
//     max_wait_ms (default 30000, 1..600000), max_sessions (default
//     100000, at least 1) and max_waiting (default 64, at least 1: the
//     waiters of all sessions together; beyond it a request that would
//     wait is rejected as CapacityExhausted). Requests without a session pass. At most
//     max_active_per_session requests of one session are in flight; the
//     others of that session wait inside Classify, in arrival order, each
//     for at most max_wait_ms from its own Classify, then are rejected as
//     CapacityExhausted ("session busy"). A request of a new session when
//     max_sessions sessions are tracked is rejected as CapacityExhausted.
//   - "header-class": parameters header (required, a lower-case header
//     name), allow (required, distinct policy class names) and default
//     (required, a class name); every allowed class and the default must
//     be configured policy classes. The policy class becomes the header's
//     value when it is in allow, the default otherwise; it never rejects.
//     The header must be among the captured headers, since a classifier
//     sees no other; the configuration loader adds it.
//
// Invariants:
//
//   - Every provider decodes its parameters strictly (unknown fields, wrong
//     types and trailing data are refused) and reports every invalid
//     parameter, each error naming the classifier type, the parameter and
//     the value. Nothing is clamped or silently defaulted except the
//     documented optional parameters.
//   - Each Factory call makes a classifier with state of its own; nothing
//     is shared through package variables.
//   - session-gate: per session, in flight (admitted, not yet Completed or
//     Aborted) never exceeds max_active_per_session; waiters are served
//     FIFO with no barging (a newcomer never passes a waiter); a slot freed
//     by Completed or Aborted is handed directly to the oldest waiter; a
//     waiter whose context ends returns ctx.Err() at once and leaves the
//     gate as if it never came, and a context that ended never wins a slot
//     (a slot granted at the same moment is handed on); each admitted
//     request is released exactly once, and events of requests the gate
//     did not admit are ignored; a session's state is freed as soon as it
//     has nothing in flight and nobody waiting. The gate starts no
//     goroutines.
//   - No classifier here blocks in OnEvent.
//
// The package imports only the standard library and package admission.
package builtin
