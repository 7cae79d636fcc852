// Package logline writes the pieces of a log line by hand, as zap's JSON
// encoder would write them: the access log's line, one a request, whose
// fields write themselves (JSONFields) for the JSON logger the commands
// build (internal/logging), which otherwise leaves the line to zap's
// encoder. Components that write such a line import this package, never
// the logger's builder.
//
// Invariants:
//
//   - What Plain passes and AppendSeconds writes is what zap's JSON
//     encoder writes of the same string or duration (SecondsDurationEncoder),
//     byte for byte; anything else they refuse, and zap writes it.
//   - Nothing here holds state.
package logline
