// Package health polls the engine's health endpoint in the background, so
// that readiness probes read a cached answer and never reach the engine
// themselves.
//
// Invariants:
//
//   - One poll at a time, every Interval while the engine is ready and
//     every RetryInterval (shorter) while it is not, each bounded by
//     Timeout; Run owns the loop and returns when its context ends.
//   - Ready is true only when the latest poll answered 200 and it is no
//     older than three intervals: a hung engine turns unready on its own.
//   - Only a 200 from the URL itself means ready: a redirect is never
//     followed, whichever client polls.
//   - A change between ready and unready is logged once, not every poll.
package health
