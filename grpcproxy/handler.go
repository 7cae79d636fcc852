package grpcproxy

import (
	"context"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/gate"
)

// call is one gRPC call through the proxy: the gate's Exchange and what
// only gRPC knows of it. The handler's goroutine owns it; the pump
// (forward.go) never touches it.
type call struct {
	gate.Exchange
	ss     grpc.ServerStream
	ctx    context.Context // ss's: ends when the client cancels, its deadline passes, or the call ends
	method string          // "/package.Service/Method"
	in     metadata.MD     // the client's metadata
	// admitting is set once the call went to the gate, which then
	// reports it at Finish.
	admitting bool
	prefilled bool
}

// handle walks one call through the proxy: the gate admits it (waiting in
// the queue when it has to) or refuses it with a status; an admitted call
// is forwarded to the engine; finish ends it whatever happened, a panic
// included. It is the server's UnknownServiceHandler.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) (err error) {
	c := p.newCall(ss)
	defer p.finish(c, &err)
	if c.method == "" {
		return status.Error(codes.Internal, "grpcproxy: the call has no method")
	}
	if passthrough(c.method) {
		c.Outcome = gate.Passthrough
		return p.forward(c, false)
	}
	c.admitting = true
	d := p.gate.Admit(c.ctx, &c.Exchange, p.admissionRequest(c.in))
	if !d.Admitted {
		return p.refuse(c, d)
	}
	c.BeginFlight()
	return p.forward(c, d.RankChosen)
}

// passthrough reports whether a method goes to the engine without a
// slot, as the HTTP proxy's probe paths do: server reflection, which a
// client such as grpcurl holds open while it makes the call it looked up,
// and which computes nothing on the engine.
func passthrough(method string) bool {
	return strings.HasPrefix(method, "/grpc.reflection.")
}

func (p *Proxy) newCall(ss grpc.ServerStream) *call {
	ctx := ss.Context()
	in, _ := metadata.FromIncomingContext(ctx)
	method, _ := grpc.MethodFromServerStream(ss)
	c := &call{ss: ss, ctx: ctx, method: method, in: in}
	c.ID, c.Start, c.Protocol = p.ids.For(first(in, RequestIDKey)), time.Now(), gate.ProtocolGRPC
	return c
}

// admissionRequest is what the gate needs to know of a call: its rank,
// and what its classifier reads. Its size is unknown before its messages
// arrive, and it needs no Watch: the stream's context ends as soon as its
// client cancels or its connection closes.
func (p *Proxy) admissionRequest(md metadata.MD) gate.Request {
	var req gate.Request
	req.Rank, req.Pinned = rankOf(md)
	pol := p.gate.Policy()
	if pol == nil {
		return req
	}
	if pol.SessionHeader != "" {
		req.Session = first(md, strings.ToLower(pol.SessionHeader))
	}
	if len(pol.CaptureHeaders) > 0 {
		req.Headers = make(map[string]string, len(pol.CaptureHeaders))
		for _, h := range pol.CaptureHeaders {
			if v := md[strings.ToLower(h)]; len(v) > 0 {
				req.Headers[h] = strings.Join(v, ",")
			}
		}
	}
	return req
}

// ended returns why the call's context ended, nil if it has not: the
// client cancelled, its connection closed, or its deadline passed, even
// if the context's timer has not fired yet (the engine, which has the
// same deadline, may answer DEADLINE_EXCEEDED first).
func (c *call) ended() error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if dl, ok := c.ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// finish runs last for every call: it settles the outcome of a call cut
// short by a panic, which becomes an INTERNAL status rather than the end
// of the process (gRPC, unlike net/http, does not recover a handler's
// panic), and ends the exchange at the gate (flight, slot, lifecycle,
// report) exactly once. The client is gone when the call's context ended
// before the handler returned: it cancelled, its deadline passed or its
// connection closed.
func (p *Proxy) finish(c *call, err *error) {
	v := recover()
	gone := c.ended() != nil
	if v != nil {
		if gone {
			c.Fail(gate.CancelledRunning)
		} else {
			c.Fail(gate.EngineError)
		}
		p.log.Error("grpc call panicked", "request_id", c.ID, "method", c.method, "panic", v, "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "grpcproxy: internal error")
	}
	if c.admitting {
		p.gate.Finish(&c.Exchange, gone)
	}
}
