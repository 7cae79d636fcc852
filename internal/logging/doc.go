// Package logging builds the one *zap.Logger of a slotgate process
// (slotgate, enginesim). Only a command's main calls it; components take
// the logger in their options and name their own children.
//
// Invariants:
//
//   - The logger never samples: the access log must keep every line under
//     load, and zap's production sampling would drop a constant message
//     after 100 a second.
//   - Times are ISO 8601 and durations are seconds, in both formats, so
//     every command's lines read alike.
//   - Log lines and zap's own errors share one locked sink, so they never
//     interleave mid-line; a buffered logger (the access log) writes whole
//     lines only, in batches, and every line it was given once stopped.
//   - The root logger is named after the command.
//   - A JSON line whose one field writes itself (JSONFields: the access
//     log's) is the same bytes as zap's JSON encoder would write, or is
//     zap's: FuzzFastJSON and the proxy's FuzzAccessLine compare the two.
package logging
