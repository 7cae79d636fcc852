// Package gate is slotgate's admission, whatever the protocol: it
// classifies a request, takes its engine slot from the limiter or queues
// it, watches its client while it waits, decides its one outcome, follows
// its lifecycle (slot, flight, classifier events) and releases it. The
// HTTP proxy is an adapter over it, and so is any other protocol: the
// adapter turns a Decision into its own answer and forwards the rest.
//
// One request's life is an Exchange with three steps, in order:
//
//	Admit   draining, size, busy, the rank's limiter, classify, limiter
//	        (at once or queued)
//	Send    BeginFlight, then Sent as the adapter forwards; it reports
//	        Responding, the prompt, the first token (Prefilled) and the
//	        tokens as they pass
//	Finish  the flight ends, the slot is released, the lifecycle ends,
//	        the request is reported
//
// Invariants:
//
//   - Admit decides once: the exchange either holds a slot (Decision.Admitted)
//     or has a refusal outcome, and a refused exchange holds nothing.
//   - A request that has to wait (in the queue, or deferred by its
//     classifier for more than a millisecond) has its Watch started, so a
//     client that leaves is seen at once; a watch that fails ends the wait.
//     A request granted a slot after its client left is never sent: its
//     slot is handed on and its outcome is cancelled_queued.
//   - A request the adapter can park (Request.Park; under a Policy, once
//     its classifier decided it, and the Watch its deferral started has
//     ended) waits without its goroutine, in the class its classifier
//     chose: its Watch reads it first, Admit returns
//     Decision.Parked, and the Parker is resumed exactly once with the
//     decision, after its watch of the client ended; a client that leaves
//     takes the request out of the queue at once. From the limiter's first
//     answer that it would wait until it waits, it holds its queue place
//     (a limiter.Reservation, its own or the adapter's: Request.Held,
//     AdmitAtOnce), which Admit gives back on any other decision. An
//     adapter that holds the request off its goroutine itself parks it
//     with that place (ParkAtOnce), which a refusal there gives back.
//   - A panic as a parked request resumes (on the limiter's goroutine, the
//     deadline's timer or the watch's, which nobody else recovers) is
//     logged with its stack and ends no more than that request: one that
//     had not got its decision is refused (engine_error) and its slot, if
//     granted, handed on; the Observer hears one decision either way.
//   - An admitted exchange holds a limiter.Permit: its slot under N and
//     its waiting place under W. Prefilled frees the waiting place (the
//     adapter calls it at the first output, or when the answer brings
//     none); Finish releases whatever is left exactly once: at once, or
//     after a 5 ms abort grace when the client left while the engine
//     served it. An adapter that writes the answer's end after the
//     engine's may end the engine's side sooner, as the engine ends it
//     (EngineFinished: the flight, the slot, and the lifecycle, whose
//     classifier hears Completed), so that the client never sees its
//     answer's end before its slot, and its session's place under a
//     policy, are free; Finish then only reports.
//   - With limiters per rank (RankLimiters), a pinned request takes its
//     rank's places and an unpinned one the rank with the most room; a
//     pinned rank the engine does not have is a bad request.
//   - The Observer hears Received once per request that reaches the
//     limiter, as it arrives, and Decided once, when its admission is
//     decided; requests refused before (draining, size, busy, the
//     classifier) hear neither.
//   - Every exchange that went through Admit is reported to the Observer
//     once, with exactly one outcome; a passthrough exchange never is.
//   - A classifier that panics, in Classify or OnEvent, costs neither the
//     answer nor the metrics: the panic is logged and the request refused
//     (Classify) or the event dropped (OnEvent).
//
// The package knows nothing of net/http or gRPC (deps_test.go checks it):
// what it needs of a protocol is a Watch.
package gate
