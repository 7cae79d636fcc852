// Package router is the library half of the reference frontend
// (examples/frontend): a push router in the shape of Dynamo's, in front of
// a fleet of slotgate sidecars. It is an example and a test fixture, not a
// product: one process, a fixed worker list, HTTP only.
//
// A Router follows each worker's load stream with package load/watch,
// excludes the busy workers and those marked overloaded, and sends each
// request to the least loaded of the rest. Under PolicyLoad:
//
//   - The load figure is slotgate's own: (in flight + queued) / N from the
//     worker's newest snapshot, raised to the requests this router has in
//     flight there when that is higher (the snapshot may lag a request or
//     two behind). Ties go to the lower KV cache use, then round robin.
//   - When workers are known but none is eligible (every fresh one busy,
//     marked or already tried by this request) the answer is 529 "Server
//     overloaded: worker at capacity", OpenAI-shaped, with Retry-After.
//     When no worker is registered or none has a fresh snapshot, it is 503.
//   - A worker's 529 marks it overloaded for Cooldown and the request is
//     retried on another worker, at most Retries times, only while the
//     body is replayable (buffered whole) and nothing was written to the
//     client. A transport error is retried the same way, without a mark.
//   - A mark is a deadline, not a flag: it ends by itself when the clock
//     passes it, and no load event clears or extends it. Dynamo's stale
//     marks (#12138, #14213) were flags that only a load event cleared, so
//     a worker that went quiet stayed excluded for good.
//
// PolicyRoundRobin is the blind baseline: it rotates through the workers
// whatever their load, state or marks (it still retries when Retries > 0).
//
// Invariants, each checked by the tests:
//
//   - Run owns every goroutine the Router starts (the watcher's and the busy
//     flip counter's) and returns only once they have ended.
//   - A mark expires Cooldown after the 529 that set it, with no load event.
//   - A request is retried only before any byte of its answer was written.
//   - Answers stream through: each chunk read from the worker is flushed to
//     the client at once, so Server-Sent Events arrive event by event.
package router
