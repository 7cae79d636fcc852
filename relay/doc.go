// Package relay copies streamed HTTP/1.1 answers from engine connections
// to client connections on a few event loops (unless told otherwise, two
// from two processors and one per four from twelve, the first filled
// first), instead of a goroutine and its buffers per stream.
//
// A Stream is an engine answer whose head was already read (its body
// chunked) and whose head has already gone to the client: from there on,
// the relay moves the body's bytes unchanged, chunk framing included,
// from one socket to the other. Each loop owns an epoll instance, with
// each stream's two sockets registered once, edge-triggered; per event of
// an engine socket it makes one read (a short read drained it) and one
// write, the writes of a batch of events made together after its reads
// (batch_linux.go; a stream's first bytes, and a read too big for the
// batch, at once): no read that finds nothing, no change to the epoll
// set while a stream lives, no goroutine woken per event. A stream whose
// connections lend their sockets (Mover) is carried on sockets out of Go's
// netpoller, so that their events wake nothing but the loop; they go back
// to their connections before Done. Those reads and writes are made raw:
// on non-blocking descriptors they never block, so the loop keeps its
// processor through them instead of passing through the scheduler's
// system-call state (a fifth of the CPU per event in BENCHMARKS.md's
// run). While it is busy with streams, a loop waits for their events in
// epoll_wait itself, raw too, holding its processor, as an event loop's
// thread in HAProxy or nginx waits (the program raises GOMAXPROCS by the
// relay's Loops so that the held processors are extra); while the relay
// spreads streams over several loops, a loop that has caught up first
// naps a millisecond, so that one wake-up takes the events that come
// meanwhile, unless requests, which would pay the nap in latency, were
// more than a sliver of its events (nap_linux.go). A loop not busy with
// streams parks in Go's netpoller behind a gate that passes its events on only
// while the loop parks, holding nothing. The decoded body (the chunks'
// data) goes to the stream's OnData as it passes, for token counting.
//
// A loop also watches connections held idle (Watch: a request parked
// while it waits) for their peer's hang-up, in the same epoll set; and
// keeps a stream's client socket after its answer ended, when asked
// (Stream.Park), until the client's next request (the socket then goes
// back to its connection, for Park) or its hang-up, idle time or the
// relay's end (the loop closes it). A client with no stream may wait in
// a loop between requests too (Wait, a Waiter): the loop offers what
// each read of its socket takes to the Waiter's Answer, writes the
// answer, and gives the socket back, with the bytes read, for the first
// request Answer leaves.
//
// Invariants:
//   - a stream's sockets are used by its loop only, from Add until its
//     Done; nothing else reads or writes them meanwhile; moved sockets
//     are in no epoll set but their loop's; before Done the ones still of
//     use (the engine's when reusable, the client's when its answer
//     ended and it is not parked) are back in their connections, in Go's
//     netpoller, and the loop closed the others; a parked client's socket
//     is the loop's alone until Park gets it back or the loop closes it,
//     and a waiting client's until Resume gets it back, with every byte
//     read from it and not answered, or the loop closes it; a waiting
//     client's answers are written whole and in order, the rest of one
//     before its next request is read;
//   - Go's netpoller sees a loop's set only through the gate, armed
//     while the loop parks and disarmed once it wakes;
//   - OnEnd, when set, is called at most once per stream, on the loop's
//     goroutine, as the parser reads the body's last chunk and before any
//     byte of that read is written to the client: a client never sees its
//     answer's end before its owner heard of it; a stream cut before its
//     end never calls it, and one may still be cut after it (the client's
//     write fails, a socket cannot be watched, the relay stops), which
//     Done tells;
//   - Done is called exactly once per stream Add accepted, on the loop's
//     goroutine, after both sockets left the epoll set; it is given the
//     sockets back, open (a moved one the relay closed aside), and
//     decides what becomes of them (a Done that panics has them closed
//     for it); Add that fails calls nothing;
//   - a loop's table and epoll set are its own: Add only queues a stream
//     and wakes the loop, so a stream's start never waits for a batch of
//     events, nor a batch for a start; the one exception is a watch's
//     Stop, which deletes its socket from the set itself (under the
//     loop's lock, while the loop runs), so that it never waits for a
//     parked loop to wake;
//   - the engine is read only while the client has taken every byte read
//     before (back-pressure): a stream holds at most one read's worth of
//     bytes the client has not taken;
//   - a loop's goroutine ends with the context given to Run, ending every
//     stream still open as cut;
//   - every descriptor the loop reads or writes raw is non-blocking: a
//     raw call that blocked would hold a processor from the rest of the
//     program, and a stop-the-world pause with it; the one raw call that
//     blocks is the held wait (and its nap), bounded (4 ms, 1 ms),
//     interrupted by the runtime's preemption signal, made only by a loop
//     busy with streams and only when GOMAXPROCS leaves the rest of the
//     program a processor besides the loops'; a nap ends at once for a
//     stream handed over or the loop's stop.
package relay
