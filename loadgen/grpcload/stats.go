package grpcload

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// trailerWatch tells a status the server sent from one gRPC made up on the
// client's side. Both read the same from Recv (a refused connection is
// UNAVAILABLE, a message over the size limit RESOURCE_EXHAUSTED), but only
// the server's comes in trailers: grpc-go reports them, trailers-only
// answers included, as stats.InTrailer, in the call's context, before the
// call ends. A call whose context has no answeredKey is left alone.
type trailerWatch struct{}

func (trailerWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (trailerWatch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); !ok {
		return
	}
	if answered, ok := ctx.Value(answeredKey{}).(*atomic.Bool); ok {
		answered.Store(true)
	}
}

func (trailerWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (trailerWatch) HandleConn(context.Context, stats.ConnStats) {}
