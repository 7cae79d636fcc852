// Package limiter admits work to N engine slots with a bounded FIFO overflow
// queue of Q places, the worker-side hard cap of NVIDIA Dynamo
// (--engine-request-limit and DYN_DYNAMO_REQUEST_QUEUE_LIMIT).
//
// It imports only the standard library and knows nothing of HTTP or gRPC;
// the proxy package adapts it to a transport.
//
// Invariants, all kept under one mutex:
//
//   - Exact cap: at most N holders (Slots) and at most Q waiters (QueueLen)
//     at any instant, so at most N+Q requests are admitted or waiting.
//   - No false rejection: Acquire returns ErrQueueFull only when every slot is
//     held (or the queue is not empty) and the queue holds Q waiters.
//   - No barging: a new arrival takes a slot directly only when nobody waits,
//     so holding < Slots implies an empty queue.
//   - FIFO: a released slot is handed directly to the oldest waiter.
//   - A waiter whose context ends leaves the queue at once. If its slot was
//     granted in the same instant, the cancellation wins and the slot is
//     handed on, so a cancelled caller never holds a slot.
//   - Each granted slot is released exactly once: the release function is
//     safe to call twice and the second call does nothing.
//   - Lowering Slots at run time never revokes a held slot; raising it admits
//     waiters at once.
//
// The queue is an interface inside the package (queue.go) so that policy
// classes served by weighted fair queuing, per-request deadlines and
// per-request scheduling costs can be added without touching the admission
// logic: a waiter already carries its own deadline (Request.Deadline).
package limiter
