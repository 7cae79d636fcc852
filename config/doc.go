// Package config turns slotgate's command line and environment into one
// validated Config. Only package command imports it (deps_test.go checks
// this); the programs built on command get their settings through it.
//
// Invariants:
//
//   - Precedence is flag, then environment variable, then default, for every
//     setting; a flag and its variable feed one value (Dynamo once parsed
//     --engine-request-limit and never applied it).
//   - A set but empty variable counts as unset.
//   - Load reports every problem, not just the first, one per line, each
//     naming the flag or variable that gave the value and the value itself.
//   - DYN_DYNAMO_REQUEST_QUEUE_LIMIT is read only when the engine limit is
//     set; DYN_HTTP_OVERLOAD_STATUS_CODE never stops start-up but falls back
//     to 529 with a warning, as in Dynamo.
//
// The reading and the common checks are internal/flagenv's, shared with
// slotgate's other commands; this package keeps slotgate's settings, its
// rules and their wording.
//
// The package reads nothing by itself: the caller passes the arguments and
// the environment, so tests need no process state.
package config
