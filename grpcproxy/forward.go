package grpcproxy

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/gate"
)

// anyStream opens every engine call as a bidirectional stream: the proxy
// knows nothing of the method, and a stream carries the other three kinds
// too (a unary call is one message each way).
var anyStream = grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// forward sends an admitted call to the engine and relays it both ways:
// the client's messages on the pump goroutine, the engine's header,
// messages and trailers on the handler's. The engine call's context
// derives from the client's stream, so the client's deadline (as the
// engine's grpc-timeout) and its cancellation reach the engine.
func (p *Proxy) forward(c *call, rankChosen bool) error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel() // ends the engine call, and with it a pump blocked sending to it
	ctx = metadata.NewOutgoingContext(ctx, c.outgoing(rankChosen))
	opts := p.callOpts
	if sub := contentSubtype(c.in); sub != "" {
		opts = append(opts[:len(opts):len(opts)], grpc.CallContentSubtype(sub))
	}
	cs, err := p.engine.NewStream(ctx, &anyStream, c.method, opts...)
	if err != nil {
		// No stream: nothing reached the engine.
		return p.failed(c, err, false, nil)
	}
	c.Sent()
	pumped := make(chan error, 1)
	go pump(c.ss, cs, pumped, cancel)
	return p.relay(c, cs, pumped)
}

// outgoing is the metadata sent to the engine: the client's, less the
// hop's own keys, with the call's id and the rank the gate chose, if any.
func (c *call) outgoing(rankChosen bool) metadata.MD {
	md := endToEnd(c.in)
	if md == nil {
		md = make(metadata.MD, 2)
	}
	md[RequestIDKey] = []string{c.ID}
	if rankChosen {
		// Limits per rank: the gate placed the call, so the engine must
		// run it there.
		md[RankKey] = []string{strconv.Itoa(c.Rank)}
	}
	return md
}

// pump copies the client's messages to the engine until the client half-
// closes (then it half-closes the engine call), or either side fails. It
// sends its result to done, which is buffered, so it never waits for the
// handler: nil when the client half-closed or the engine call ended (its
// status comes through the handler's RecvMsg); the client's receive
// error otherwise, after which it ends the engine call.
//
// It uses only ss's receive side and cs's send side, never the call, so it
// races nothing the handler finishes. Its owner is the handler: it ends
// when ss.RecvMsg returns, at the latest as the handler returns (gRPC then
// ends the server stream and its context), or when cs.SendMsg returns, at
// the latest as the handler returns (forward's cancel ends the engine
// call).
func pump(ss grpc.ServerStream, cs grpc.ClientStream, done chan<- error, cancel context.CancelFunc) {
	var f frame
	for {
		if err := ss.RecvMsg(&f); err != nil {
			if errors.Is(err, io.EOF) {
				_ = cs.CloseSend() // its failure shows in the engine call's status
				done <- nil
				return
			}
			done <- err // before cancel: the handler reads it when the engine call ends
			cancel()
			return
		}
		if err := cs.SendMsg(&f); err != nil {
			f.free() // no-op if the codec took it
			done <- nil
			return
		}
	}
}

// relay copies the engine's answer to the client on the handler's
// goroutine: the header as soon as it arrives (before the first message,
// and also when the engine fails before any), every message, then the
// trailers and the engine's status.
func (p *Proxy) relay(c *call, cs grpc.ClientStream, pumped <-chan error) error {
	hdr, _ := cs.Header() // nil: the engine sent none, or the call failed first
	answered := hdr != nil
	if answered {
		c.Responding()
		if err := c.ss.SendHeader(endToEnd(hdr)); err != nil {
			return p.clientFailed(c, err, pumped)
		}
	}
	var f frame
	var err error
	for {
		if err = cs.RecvMsg(&f); err != nil {
			break
		}
		if !c.prefilled {
			// A call's first response message counts as its first token:
			// its waiting place is freed.
			c.prefilled = true
			c.Prefilled()
		}
		if c.FirstByte.IsZero() {
			c.FirstByte = time.Now()
		}
		if err = c.ss.SendMsg(&f); err != nil {
			f.free()
			return p.clientFailed(c, err, pumped)
		}
	}
	if errors.Is(err, io.EOF) {
		c.EngineDone() // its trailers came: no abort grace is needed
	}
	if c.ended() == nil {
		// An answer without messages ends its prefill too. A call whose
		// client left is not over at the engine yet: Finish frees its
		// waiting place with its slot, after the abort grace, as HTTP's.
		c.Prefilled()
	}
	tr := cs.Trailer()
	if !answered && len(tr) > 0 {
		// A trailers-only answer: the engine answered all the same.
		answered = true
		c.Responding()
	}
	if c.admitting {
		c.ss.SetTrailer(p.trailers(tr))
	} else {
		c.ss.SetTrailer(endToEnd(tr)) // a passthrough call: no load report
	}
	if errors.Is(err, io.EOF) {
		return nil // the engine's status is OK
	}
	return p.failed(c, err, answered, pumped)
}

// trailers are the trailers of a forwarded call: the engine's that pass
// the proxy, then Options.Trailer's under the keys the engine's lack.
func (p *Proxy) trailers(engine metadata.MD) metadata.MD {
	md := endToEnd(engine)
	if p.trailer == nil {
		return md
	}
	own := p.trailer()
	if len(own) == 0 {
		return md
	}
	if md == nil {
		md = make(metadata.MD, len(own))
	}
	for k, v := range own {
		md[k] = v // slotgate's report replaces the engine's, as over HTTP
	}
	return md
}

// failed maps a failed engine call to the client's status and the call's
// outcome, in one place:
//   - the client left (cancelled, past its deadline): cancelled_running,
//     and its context's status, which it never sees;
//   - the client's side failed (a message over the size bound, or one
//     that could not be read): rejected_too_large or rejected_bad_request,
//     and gRPC's status for it;
//   - no answer from the engine and UNAVAILABLE (connection refused or
//     lost before the engine's header): rejected_unavailable, and
//     slotgate's own UNAVAILABLE;
//   - anything else: engine_error, and the engine call's status
//     unchanged.
func (p *Proxy) failed(c *call, err error, answered bool, pumped <-chan error) error {
	if perr := clientFault(c, pumped); perr != nil {
		return clientError(c, perr)
	}
	if ctxErr := c.ended(); ctxErr != nil {
		c.Fail(gate.CancelledRunning)
		return status.FromContextError(ctxErr).Err()
	}
	st := status.Convert(err)
	if !answered && st.Code() == codes.Unavailable {
		c.Fail(gate.RejectedUnavailable)
		p.log.Warn("engine unreachable", "request_id", c.ID, "method", c.method, "error", err)
		return status.Error(codes.Unavailable, gate.MessageUnreachable)
	}
	c.Fail(gate.EngineError)
	p.log.Debug("engine call failed", "request_id", c.ID, "method", c.method, "code", st.Code().String(), "error", err)
	return st.Err()
}

// clientFault returns the pump's error when the client's side failed the
// call while the client was still there (a message over the size bound,
// or one that could not be read), nil otherwise. gRPC has then already
// ended the call with that status, and with it the call's context, maybe
// before the pump reported: once the context ended, the pump ends at once
// (its RecvMsg and SendMsg return), so its result is waited for.
func clientFault(c *call, pumped <-chan error) error {
	if pumped == nil {
		return nil // no pump: the engine call never opened
	}
	var perr error
	if c.ended() != nil {
		perr = <-pumped
	} else {
		select {
		case perr = <-pumped:
		default:
			return nil
		}
	}
	if code := status.Code(perr); code == codes.Canceled || code == codes.DeadlineExceeded {
		return nil // the client left: not a fault of its request
	}
	return perr
}

// clientError is the status of a call whose client's side failed while
// the client was still there.
func clientError(c *call, err error) error {
	st := status.Convert(err)
	if st.Code() == codes.ResourceExhausted {
		c.Fail(gate.RejectedTooLarge)
	} else {
		c.Fail(gate.RejectedBadRequest)
	}
	return st.Err()
}

// clientFailed ends a call whose answer could not be sent to the client:
// its request failed (see clientFault) or, most likely, it left.
func (p *Proxy) clientFailed(c *call, err error, pumped <-chan error) error {
	if perr := clientFault(c, pumped); perr != nil {
		return clientError(c, perr)
	}
	if ctxErr := c.ended(); ctxErr != nil {
		c.Fail(gate.CancelledRunning)
		return status.FromContextError(ctxErr).Err()
	}
	c.Fail(gate.EngineError)
	p.log.Warn("grpc answer not sent", "request_id", c.ID, "method", c.method, "error", err)
	return status.Convert(err).Err()
}
