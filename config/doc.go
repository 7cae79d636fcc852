// Package config turns slotgate's command line and environment into one
// validated Config. Only package command imports it (deps_test.go checks
// this); the programs built on command get their settings through it.
//
// Invariants:
//
//   - Precedence is flag, then environment variable, then the variable's
//     other names in order, then default, for every setting; a flag and its
//     variables feed one value (Dynamo once parsed --engine-request-limit
//     and never applied it). The backend admission settings take Dynamo
//     1.7's names first and their legacy names after: for N,
//     DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT then DYN_ENGINE_REQUEST_LIMIT;
//     for Q, DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT then
//     DYN_DYNAMO_REQUEST_QUEUE_LIMIT. A legacy name in use is silent; one
//     shadowed by a different value under the canonical name is a warning.
//   - A set but empty variable counts as unset.
//   - Load reports every problem, not just the first, one per line, each
//     naming the flag or variable that gave the value (the legacy one, when
//     that was it) and the value itself.
//   - The gate is on when N or W is set (Config.GateOn); otherwise slotgate
//     is a pure pass-through and Q is 0.
//   - Q's rules follow the name that gave it. Under the flag or
//     DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT (Dynamo 1.7), Q is any
//     whole number, 0 for no queue, and a positive Q with neither N nor W
//     stops start-up. Under DYN_DYNAMO_REQUEST_QUEUE_LIMIT (Dynamo 1.5), Q
//     is at least 2 and read only when N is set: ignored silently without
//     N or W, ignored with a warning when only W is set. Not given, Q is 16
//     with the gate on.
//   - --queue-controlled-delay=false makes QueueTimeout 0, whatever the
//     timeout's settings say (their values are still checked).
//   - DYN_HTTP_OVERLOAD_STATUS_CODE never stops start-up but falls back to
//     529 with a warning, as in Dynamo.
//
// The reading and the common checks are internal/flagenv's, shared with
// slotgate's other commands; this package keeps slotgate's settings, its
// rules and their wording.
//
// The package reads nothing by itself: the caller passes the arguments and
// the environment, so tests need no process state.
package config
