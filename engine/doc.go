// Package engine is slotgate's client of its one inference engine: it
// sends requests to the engine and reads their answers, over keep-alive
// connections of its own.
//
// The common request (plain HTTP/1.1, a body held in memory, none, or one
// of a declared length that streams, no upgrade, no Expect) takes a
// hand-written path on the caller's goroutine: headers and a body held in
// memory go out in one write (a body that streams, or a huge one, through
// a pooled 16 KiB buffer, never copied whole, and never sent twice), and
// the answer is read from a connection of the client's pool: the common answer's head (HTTP/1.1, a
// stated length) by a parser of its own, fuzzed to read exactly what
// http.ReadResponse reads, every other by ReadResponse. On a socket, the
// write, the look for the engine's close before it and the wait for the
// answer are one call (rawio.Socket.WriteWait), made raw: no read that
// finds nothing before the wait. Everything else goes through net/http's
// Transport, configured the same way.
//
// Invariants:
//
//   - One request at a time per connection: a connection leaves the pool
//     for one exchange and goes back only after its answer was read to its
//     end, on a connection the engine keeps alive. An answer closed before
//     its end, or cut by its request's context, closes the connection
//     first: the engine sees the request abandoned, and nothing drains a
//     stream.
//   - On the hand-written path, a request is sent again at most once, and
//     only when a connection taken from the pool failed before a single
//     byte of answer (the engine closed it while it was idle): when its
//     write failed, or, for a replayable request (GET, HEAD, OPTIONS,
//     TRACE, or one with an idempotency key, net/http's rule), when the
//     answer ended before its first byte. A generation (a POST) the engine
//     may have read is never resent: a second copy would run beside the
//     first, past the cap. So that an idle close does not fail one, such a
//     request is written to a pooled connection only after a look at its
//     socket, in the same call as the write; a connection found closed is
//     passed over, however many the pool holds, and is not a try.
//     A request the engine began to answer is never resent. net/http's
//     path follows net/http's own rules, which are as strict.
//   - The end of a request's context cuts its connection's reads and writes
//     short until the answer is closed.
//   - A Detached answer's connection is the caller's until Done; one whose
//     socket a relay took (MoveOut) works the socket MoveIn gives back,
//     and only that one is pooled.
//   - A connection holds a read buffer only while it reads an answer
//     (from its request's send to the body's end or Detach); the buffer
//     goes back to a pool only once nothing reads it.
//   - What an answer of the hand-written path allocates (its Response,
//     header map, values and body wrappers) is reused only once its caller
//     gave it back with Recycle, its body closed; an answer never given
//     back is the collector's.
//   - No environment proxy, on either path: the engine is beside slotgate.
//   - An answer's head larger than MaxResponseHeaderBytes fails the
//     request, and its connection is closed, never pooled. The hand-written
//     path counts interim answers (1xx) in the limit; net/http's counts
//     each head on its own.
//   - Close closes the idle connections of both paths.
//   - Only the standard library is imported, internal/httpsyntax's
//     grammar and internal/rawio's calls.
package engine
