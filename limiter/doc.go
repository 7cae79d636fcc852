// Package limiter admits work to N engine slots with a bounded overflow
// queue of Q places, FIFO or split into policy classes served by weighted
// fair queuing, the worker-side hard cap of NVIDIA Dynamo
// (--engine-request-limit and DYN_DYNAMO_REQUEST_QUEUE_LIMIT).
//
// It imports only the standard library and knows nothing of HTTP or gRPC;
// the proxy package adapts it to a transport.
//
// Invariants, all kept under one mutex:
//
//   - Exact cap: at most N holders (Slots) and at most Q waiters (QueueLen)
//     at any instant, all policy classes together, so at most N+Q requests
//     are admitted or waiting. A class with a Limit holds at most Limit of
//     those waiters.
//   - No false rejection: Acquire returns ErrQueueFull only when every slot is
//     held (or the queue is not empty) and either the queue holds Q waiters
//     or the request's class holds Limit.
//   - No barging: a new arrival takes a slot directly only when nobody waits
//     in any class, so holding < Slots implies an empty queue.
//   - Order: a released slot is handed directly to the next waiter. Without
//     classes that is the oldest waiter (FIFO). With classes, each class is
//     a FIFO and the classes share slots by deficit round robin: the
//     classes with waiters form a ring, in the order they became non-empty;
//     a visit to a class adds its Quantum to its deficit, and each grant
//     during the visit goes to the class's oldest waiter and subtracts that
//     waiter's Cost. The visit ends when, at a grant, the oldest waiter
//     costs more than the deficit (the deficit is kept and the next class is
//     visited), or when the class empties (its deficit is reset to 0 and it
//     leaves the ring; it rejoins at the end). Classes that stay backlogged
//     are granted cost in proportion to their quanta, so requests in
//     proportion to quantum/cost. Each grant costs O(1), or O(classes)
//     when a visit ends (drr.go).
//   - A waiter whose context ends leaves the queue at once, and one whose
//     deadline passes leaves at that instant; removal from any class keeps
//     the round robin consistent. If its slot was granted in the same
//     instant, the cancellation wins and the slot is handed on, so a
//     cancelled caller never holds a slot.
//   - Each granted slot is released exactly once: the release function is
//     safe to call twice and the second call does nothing.
//   - Lowering Slots at run time never revokes a held slot; raising it admits
//     waiters at once, in the same order a release would.
//   - Stats are consistent: the totals are the sums of the per-class
//     counters, and the classes' Waiting add up to Waiting.
//
// The queue is an interface inside the package (queue.go) with two
// implementations, the plain FIFO and the per-class deficit round robin, so
// the admission logic is the same for both.
package limiter
