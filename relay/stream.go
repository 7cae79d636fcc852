package relay

import (
	"errors"
	"net"
	"time"
)

// ErrUnsupported is returned by New where the relay does not run (not
// Linux), and by Add for a connection without a socket.
var ErrUnsupported = errors.New("relay: not supported here")

// ErrShutdown ends the streams still open when their loop's context ends.
var ErrShutdown = errors.New("relay: shut down")

// A Stream is one answer to relay: the engine's socket, with the body's
// first bytes already read from it (Pending: chunked framing and all),
// and the client's socket, whose answer's head was written. Pending may
// start at any chunk's size line: a caller that wrote the first whole
// chunks with the head (Lead) gives only the rest.
type Stream struct {
	Engine  net.Conn
	Pending []byte
	Client  net.Conn
	// OnData gets the body's decoded bytes (the chunks' data) as they
	// pass, on the loop's goroutine; it must not keep the slice. A panic
	// in it ends the stream, cut.
	OnData func([]byte)
	// OnEnd, when set, is called once, on the loop's goroutine, when the
	// relay has read the body's last chunk, before the client is given
	// it: the engine is done with the request by then, so an owner that
	// frees what the engine held (a slot) has it free by the time its
	// client sees the answer's end, and can send its next request. Done
	// still follows, and may tell a stream cut after it (the client's
	// write failed, the relay stopped). A panic in it ends the stream,
	// cut.
	OnEnd func()
	// Done is called once, when the stream ends (see Result), on the
	// loop's goroutine; the sockets are then the caller's again, open.
	Done func(Result)
	// EngineMover and ClientMover, when both are set, lend the sockets to
	// the relay for the stream's life, out of Go's netpoller (Mover); Done
	// comes after the ones of use were given back: the engine's when
	// Result.EngineReusable, the client's when Result.Ended and not
	// ClientGone. The relay closes the others, whose connections keep the
	// closed stand-ins they had while lent (closing them again does
	// nothing). Unset, the relay works the connections' own descriptors,
	// which Go's netpoller watches too.
	EngineMover, ClientMover Mover
	// Park, when set with the Movers, keeps the client's socket in the
	// loop once its answer ended (Result.Ended, Result.Parked), rather
	// than giving it back before Done: a client that hangs up then (one
	// stream a connection, the common case) costs the loop a close, not
	// the move back, a server's read and a close through the netpoller.
	// When the client sends its next request, the socket goes back into
	// its connection and Park gets it, on the loop's goroutine; a client
	// that hangs up, stays idle for ParkIdle (0: no limit) or outlives
	// the relay has its socket closed by the loop. The owner sets Park
	// only when it holds nothing the client sent past the stream's
	// request: the loop waits for the socket's next bytes.
	Park     func(net.Conn)
	ParkIdle time.Duration
}

// A Mover lends a connection's socket to the relay: out of Go's netpoller,
// which would otherwise wake an idle processor's thread at each of the
// stream's events for nothing (rawio.MoveOut).
type Mover interface {
	// MoveOut hands the socket over: the descriptor is the relay's, and
	// the connection makes no call, until MoveIn. On failure the
	// connection is as it was.
	MoveOut() (fd int, err error)
	// MoveIn gives the socket back, fd then the connection's: it returns
	// the connection to close it with from then on. On failure the
	// connection is closed.
	MoveIn(fd int) (net.Conn, error)
}

// Result is how a stream ended.
type Result struct {
	// Ended: the body's last byte reached the client, and nothing came
	// after it from the engine (its connection may be used again).
	Ended bool
	// ClientGone: the client hung up or its socket failed.
	ClientGone bool
	// Err is why a stream that did not end ended: the client's or the
	// engine's socket error, a broken framing, an engine that closed
	// early, ErrShutdown.
	Err error
	// Sent is the bytes written to the client, framing included;
	// FirstWrite when the first of them went.
	Sent       int64
	FirstWrite time.Time
	// EngineReusable: the engine's connection ended cleanly with the
	// body, with nothing read past it.
	EngineReusable bool
	// Parked: the client's socket stays in the loop (Stream.Park); its
	// connection is not the caller's until Park gets it.
	Parked bool
}
