package grpcproxy

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/slotgate/slotgate/gate"
)

// DefaultMaxMessageBytes bounds each message, both ways, when
// Options.MaxMessageBytes is 0: room for a long prompt and its token ids.
const DefaultMaxMessageBytes = 64 << 20

// Options configure a Proxy.
type Options struct {
	// Gate admits each call: the same gate as the HTTP proxy's, so that
	// both protocols share the engine's slots. Required.
	Gate *gate.Gate
	// Engine is the connection to the engine's gRPC server, dialled by the
	// caller (a *grpc.ClientConn). Required.
	Engine grpc.ClientConnInterface
	// MaxMessageBytes bounds each message, from the client and from the
	// engine; a message over it ends the call with RESOURCE_EXHAUSTED.
	// 0: DefaultMaxMessageBytes.
	MaxMessageBytes int
	// RetryAfter is sent, in whole seconds rounded up, as "retry-after"
	// trailer metadata on overload and draining refusals, as HTTP's
	// Retry-After. 0: none.
	RetryAfter time.Duration
	// Trailer, when set, gives metadata added to the trailers of every
	// call the gate admitted and forwarded (its engine call opened),
	// whatever the engine's status, unless the call's client failed
	// first; refused calls never carry it. It is meant for a per-call ORCA
	// load report (endpoint-load-metrics-bin).
	//
	// Its keys replace those of the engine's trailers: a client must not
	// get two load reports (grpc-go fails a call that carries two), and
	// slotgate's, which counts the whole worker, wins, as its ORCA header
	// does over HTTP. It is called once per such call, on the call's goroutine,
	// as the engine call ends: before the call's slot is released, so the
	// call still counts in the gate's and the load's figures. It must be
	// safe for concurrent use and fast; its keys must be lower-case (as
	// metadata.Pairs makes them), and the proxy only reads what it
	// returns.
	Trailer func() metadata.MD
	// Logger gets the engine's failures and panics; nil discards them.
	Logger *slog.Logger
}

// Proxy forwards every gRPC call that its server does not serve itself to
// the engine, once the gate admitted it. It is safe for concurrent use.
type Proxy struct {
	gate       *gate.Gate
	engine     grpc.ClientConnInterface
	maxMsg     int
	retryAfter string             // "": none
	trailer    func() metadata.MD // nil: none
	log        *slog.Logger
	ids        *gate.IDs
	callOpts   []grpc.CallOption // every engine call's, before its content-subtype
}

// New checks opts and returns a Proxy; it starts nothing.
func New(opts Options) (*Proxy, error) {
	switch {
	case opts.Gate == nil:
		return nil, errors.New("grpcproxy: a gate is required")
	case opts.Engine == nil:
		return nil, errors.New("grpcproxy: an engine connection is required")
	case opts.MaxMessageBytes < 0:
		return nil, errors.New("grpcproxy: the message size bound must not be negative")
	case opts.RetryAfter < 0:
		return nil, errors.New("grpcproxy: retry-after must not be negative")
	}
	p := &Proxy{gate: opts.Gate, engine: opts.Engine, maxMsg: opts.MaxMessageBytes, trailer: opts.Trailer,
		log: opts.Logger, ids: gate.NewIDs()}
	if p.maxMsg == 0 {
		p.maxMsg = DefaultMaxMessageBytes
	}
	if opts.RetryAfter > 0 {
		p.retryAfter = strconv.Itoa(int(math.Ceil(opts.RetryAfter.Seconds())))
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p.callOpts = []grpc.CallOption{
		grpc.ForceCodecV2(codec{}),
		grpc.MaxCallRecvMsgSize(p.maxMsg),
		grpc.MaxCallSendMsgSize(p.maxMsg),
	}
	return p, nil
}

// ServerOptions are the options of the proxy's grpc.Server: the handler of
// every service not registered on the server, the codec that passes
// messages through, and the message size bound.
//
// The codec is forced for the whole server; it encodes anything but the
// proxy's own messages as protobuf, so services registered on the same
// server (grpc.health.v1, the load report) work as usual, provided they
// use protobuf.
func (p *Proxy) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodecV2(codec{}),
		grpc.MaxRecvMsgSize(p.maxMsg),
		grpc.MaxSendMsgSize(p.maxMsg),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
	}
}

// DialOptions are the options of the proxy's connection to the engine
// (Options.Engine) beside its credentials: the same fixed windows as the
// server's.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
	}
}

// streamWindow and connWindow are the proxy's HTTP/2 flow-control windows,
// each way. Fixed, they turn off grpc-go's bandwidth-delay estimation,
// which pings the peer as data arrives (for a token stream, message after
// message) and grows the windows from the round trips: fixing them took
// the proxy's CPU per streamed message from 7.3 to 6.3 µs (BENCHMARKS.md).
// A stream keeps grpc-go's initial window, 64 KiB, which a stream of
// tokens never fills and which bounds what the proxy holds of a client
// that stops reading; a large message (a long prompt) goes in 64 KiB
// steps, a round trip each, about 1.5 ms a MiB at a pod network's 0.1 ms.
// A connection, shared by its streams, gets 1 MiB.
const (
	streamWindow = 64 << 10
	connWindow   = 1 << 20
)
