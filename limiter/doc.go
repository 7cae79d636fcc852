// Package limiter is the worker-side admission gate of NVIDIA Dynamo: at
// most N requests admitted (Slots; Dynamo's engine request limit), at most
// W of them before their first generated token (WaitingLimit; Dynamo 1.7's
// engine waiting limit), at most P prompt tokens in prefill
// (PrefillTokenLimit), and a bounded queue of Q places (QueueLen) and of
// at most a number of tokens (QueueTokenLimit), FIFO or split into policy
// classes served by deficit round robin. Any engine limit may be unset
// (one of N and W is set); NewUnlimited is a pure pass-through.
//
// It imports only the standard library and knows nothing of HTTP or gRPC;
// the gate package takes and releases its permits for each request.
//
// An admitted request holds a Permit: its slot until Release, and its
// waiting place and its prompt tokens (Request.Tokens) until FirstToken or
// Release, whichever comes first.
//
// A request waits in AcquireRequest, on its caller's goroutine, or
// parked (Park), with none: its grant, its deadline or its cancellation
// is told once, on a goroutine started then. Both wait in one queue.
// A request on its way to wait, from a caller that cannot wait itself to
// one that can, may hold a place in it meanwhile (TryReserve): counted
// against Q, so that a burst is refused at once rather than taken for
// waiters, but not a place in line, which it takes only when it comes to
// wait (an arrival that finds a slot freed meanwhile may take it first).
//
// Invariants, all kept under one mutex:
//
//   - Exact cap: an admission happens only while fewer than N hold a slot
//     and fewer than W hold a waiting place, and a request queues only
//     while fewer than Q wait or hold a Reservation (all classes together;
//     a class with a Limit holds at most Limit of them). So at most N are admitted, W of them
//     before their first token, and Q wait, at any instant, except after
//     a limit was lowered (below).
//   - Exact prefill-token budget: an admission happens only when the
//     request's tokens fit beside the tokens in prefill (prefill + t <= P),
//     or when no tokens at all are in prefill: a request larger than P is
//     admitted alone, so it is never starved nor refused for its size.
//     So at no instant are more than P tokens in prefill, except those of
//     a single request larger than P (beside requests of no tokens), or
//     after P was lowered (below).
//   - Queue tokens: a request enters a non-empty queue only when its
//     tokens fit beside the queued ones (queued + t <= QueueTokenLimit);
//     otherwise it is refused with ErrQueueTokens. Into an empty queue it
//     enters whatever its size, so the queued tokens exceed the limit only
//     by a single waiter, after the limit was lowered, or by the growth of
//     a TokenCount, which never evicts a waiter.
//   - No false rejection: ErrQueueFull is returned only when N, W or P
//     has no room for the request (or somebody waits) and the queue holds
//     Q waiters and reservations together, or the request's class holds
//     Limit; ErrQueueTokens only
//     when somebody waits and the queued tokens leave no room for its
//     own.
//   - No barging: a new arrival is admitted directly only when nobody
//     waits in any class, so room under N and W, with the tokens of the
//     waiter next in order fitting P, implies an empty queue. Room that
//     appears (a Release, a FirstToken, a raised limit, a waiter leaving)
//     is handed to waiters under the same lock, while all limits have
//     room for the next one, leaving no instant in which a newcomer could
//     take it; room under some of the limits alone admits nobody.
//   - No skipping: the waiter next in order (FIFO, the round robin's
//     next grant, or adaptive LIFO's newest) is the only one that may be
//     granted. If its tokens do not fit P it holds up those behind it,
//     even smaller ones that would fit. This keeps the order exact and
//     is what lets a large prompt in: prefill drains until it fits, or
//     empties. A newcomer may become the next waiter (the newest, when a
//     LIFO grant is due; or of a class the round robin serves first), and
//     is then granted on arrival if it fits.
//   - Order: without classes the oldest waiter is served first (FIFO).
//     With classes, each class is a FIFO and the classes share grants by
//     deficit round robin: the classes with waiters form a ring, in the
//     order they became non-empty; a visit to a class adds its Quantum to
//     its deficit, and each grant during the visit goes to the class's
//     oldest waiter and subtracts that waiter's Cost. The visit ends when,
//     at a grant, the oldest waiter costs more than the deficit (the
//     deficit is kept and the next class is visited), or when the class
//     empties (its deficit is reset to 0 and it leaves the ring; it
//     rejoins at the end). Classes that stay backlogged are granted cost
//     in proportion to their quanta. Each grant costs O(1), or O(classes)
//     when a visit ends (drr.go).
//   - Adaptive LIFO (Options.AdaptiveLIFO): after a waiter leaves the
//     queue by the queue delay (QueueTimeout, ErrQueueExpired; not its own
//     Request.Deadline), the next grant goes to the newest waiter of all
//     classes, charging no class's deficit; then the order above resumes.
//     Expiries before that grant make it once, not once each.
//     Stats.DequeuedLIFO counts those grants.
//   - A waiter whose context ends leaves the queue at once, and one whose
//     deadline passes leaves at that instant; removal from any class keeps
//     the round robin consistent. If it was granted a slot in the same
//     instant, cancellation wins and the room is handed on, so a cancelled
//     caller never holds a slot; a deadline loses, the grant came in time.
//     A grant reversed this way costs its class nothing: the round robin
//     gives the Cost it charged back to the class's deficit before the
//     room is handed on (never beyond what a deficit may hold: below 2^40
//     between visits, plus the Quantum during one). Nothing is given back
//     if the class emptied meanwhile, its deficit having been reset as
//     above, nor for an adaptive LIFO grant, which charged nothing.
//   - Each place is freed exactly once: Release frees the slot, FirstToken
//     the waiting place and the tokens, and Release those too if
//     FirstToken has not; further calls, from any goroutine, do nothing.
//     Both take the lock to free, so no instant counts more requests
//     before their first token than admitted. A request's tokens are
//     fixed at its grant: a TokenCount raised later changes nothing.
//   - Changing limits at run time (SetLimits, SetSlots) takes nothing
//     back. Raising N, W or P admits waiters at once, in the order a
//     release would. Lowering N, W or P lets the requests above it finish;
//     what they free is not handed on until the next waiter fits the new
//     limit. Waiters beyond a lowered Q or queue token limit stay queued,
//     and newcomers are refused until they fit. Invalid limits are refused
//     and change nothing, with an error naming the limit and the value.
//   - Stats are consistent: the limits and gauges are read together under
//     the lock, the totals are the sums of the per-class counters, and
//     the classes' Waiting and QueuedTokens add up to Waiting and
//     QueuedTokens.
//   - Token arithmetic cannot overflow: a request counts at most 2^40
//     tokens, and an unset token limit is kept as math.MaxInt64, against
//     which fits are computed as t <= limit - used.
//
// The queue is an interface inside the package (queue.go) with two
// implementations, the plain FIFO and the per-class deficit round robin, so
// the admission logic is the same for both.
package limiter
