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
// and the client's socket, whose answer's head was written.
type Stream struct {
	Engine  net.Conn
	Pending []byte
	Client  net.Conn
	// OnData gets the body's decoded bytes (the chunks' data) as they
	// pass, on the loop's goroutine; it must not keep the slice. A panic
	// in it ends the stream, cut.
	OnData func([]byte)
	// Done is called once, when the stream ends (see Result), on the
	// loop's goroutine; the sockets are then the caller's again, open.
	Done func(Result)
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
}
