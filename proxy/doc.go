// Package proxy forwards HTTP requests to one inference engine through a
// limiter.Limiter: N engine slots, a FIFO queue of Q, and an immediate
// overload answer beyond that.
//
// Invariants:
//
//   - Admission happens before the request body is read. A rejection never
//     reads the body and never touches the engine.
//   - A queued request has its body read while it waits (bounded by
//     MaxRequestBodyBytes). Go's HTTP/1.1 server notices a departed client
//     only once the body was read to its end; reading it lets a client that
//     leaves the queue be removed at once, and never forwarded.
//   - After a slot is granted the request context is checked again, so a
//     request whose client is gone never reaches the engine.
//   - The slot is held until the last byte of the response is written or the
//     client goes away, and released exactly once on every path, including a
//     panic (httputil.ReverseProxy aborts a broken stream with one).
//   - Responses stream through unbuffered: Server-Sent Events and any other
//     response without a Content-Length are flushed on every write.
//   - Every request that goes through admission is reported once to the
//     Observer with exactly one outcome, and logged once in the access log.
//   - Passthrough paths (engine probes) take no slot and are not counted.
package proxy
