// Package jsonapi holds what slotgate's small admin JSON APIs share: the
// /busy_threshold API (load/busy) and the /limits API (admin/limits). It
// reads a request body, decodes it as one JSON object of known keys, and
// writes JSON answers and errors. Each API keeps its own fields, ranges and
// messages; this package knows none of them.
//
// # Invariants
//
// Each is checked by the tests.
//
//   - Every answer is application/json, and every error answer
//     (WriteError, MethodNotAllowed, and WriteJSON given a value that cannot
//     be encoded, which becomes a 500) is {"error":"<message>"}, never a
//     partial body.
//   - Bodies are bounded: ReadBody returns at most its limit of bytes, and
//     a larger body is a 413 before anything parses it.
//   - Keys are matched exactly: DecodeObject takes only the keys it is
//     given, case-sensitively, unlike encoding/json's struct decoding,
//     which also takes "MODEL" for "model".
//   - A body DecodeObject refuses is a 422, and its message is the same
//     whatever the map order: unknown keys are listed sorted and quoted.
//
// The package imports only the standard library, and keeps no state.
package jsonapi
