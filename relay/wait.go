package relay

import (
	"net"
	"time"
)

// A Waiter is a kept client connection with no stream, whose answers are
// small and quick to give: it waits in a loop between requests (Relay.Wait),
// its socket out of Go's netpoller, and the loop offers each request it
// sends to Answer. A request Answer takes costs the loop a read and a
// write; one it leaves sends the socket back into its connection, for
// Resume. Under an overload storm, a refused client's next request is
// most likely refused too: waiting here, it is refused without a
// goroutine's wake-up, the read that finds nothing after each answer, or
// net/http's bookkeeping.
type Waiter struct {
	// Mover lends the socket (Mover.MoveOut) and takes it back.
	Mover Mover
	// Answer is offered what one read of the socket took, req, while the
	// client waits; it appends the answer to out and reports true, or
	// reports false to leave the request to the connection's server. It
	// runs on the loop's goroutine, and must neither block nor keep req
	// or out.
	Answer func(req, out []byte) ([]byte, bool)
	// Resume gets the connection back, on the loop's goroutine, with the
	// bytes Answer left (a copy) to serve ahead of it.
	Resume func(c net.Conn, ahead []byte)
	// Idle is how long the client may wait without a request before the
	// loop closes its socket: the server's idle timeout (0: no limit).
	Idle time.Duration
}
