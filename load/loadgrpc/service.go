package loadgrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// Source is where the service reads the load: *report.Hub.
type Source interface {
	// Latest returns the latest snapshot, which the caller must not
	// modify; nil when there is none yet.
	Latest() *report.Snapshot
	// Watch calls f with the latest snapshot and then with each newer one
	// until ctx ends (it returns ctx.Err()) or f returns an error (it
	// returns that error).
	Watch(ctx context.Context, f func(*report.Snapshot) error) error
}

// errShutdown is the cause of a watch ended by Shutdown.
var errShutdown = errors.New("loadgrpc: service shut down")

// Service is the LoadReporter service. Its methods are safe for
// concurrent use.
type Service struct {
	loadv1.UnimplementedLoadReporterServer

	src Source
	// stopped is done once Shutdown is called. It is a context, not a
	// channel, so that each watch can tie its end to it with
	// context.AfterFunc instead of a goroutine of its own.
	stopped  context.Context
	shutdown context.CancelFunc
}

// NewService returns the service, reading from src. It starts nothing.
// It fails only when src is nil.
func NewService(src Source) (*Service, error) {
	if src == nil {
		return nil, errors.New("loadgrpc: a Source is required")
	}
	stopped, shutdown := context.WithCancel(context.Background())
	return &Service{src: src, stopped: stopped, shutdown: shutdown}, nil
}

// Register registers s on r as slotgate.load.v1.LoadReporter. Shutdown
// ends s's streams on every server it is registered on.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	loadv1.RegisterLoadReporterServer(r, s)
}

// Shutdown ends every WatchLoad stream, those open and those to come, with
// UNAVAILABLE, so that a GracefulStop of the server does not wait for the
// watchers to hang up. GetLoad keeps answering. Shutdown is idempotent.
func (s *Service) Shutdown() { s.shutdown() }

// GetLoad returns the latest snapshot, or UNAVAILABLE when the Source has
// none yet (a Hub always has one).
func (s *Service) GetLoad(context.Context, *loadv1.GetLoadRequest) (*loadv1.Load, error) {
	snap := s.src.Latest()
	if snap == nil {
		return nil, status.Error(codes.Unavailable, "no load published yet")
	}
	return ToProto(snap), nil
}

// WatchLoad sends every snapshot the Source's Watch gives, the latest
// first, until the client's context ends (it returns CANCELED or
// DEADLINE_EXCEEDED, which the client no longer reads), a Send fails (it
// returns that error), Shutdown is called (UNAVAILABLE), or the Source
// stops (report.ErrStopped: UNAVAILABLE). A Send blocked by a client that
// stopped reading (HTTP/2 flow control) waits for that client's context
// or the server's hard stop, not for Shutdown.
func (s *Service) WatchLoad(_ *loadv1.WatchLoadRequest, stream loadv1.LoadReporter_WatchLoadServer) error {
	if s.stopped.Err() != nil {
		return errShuttingDown()
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.stopped, func() { cancel(errShutdown) })
	defer stop()

	err := s.src.Watch(ctx, func(snap *report.Snapshot) error {
		if snap == nil {
			return nil
		}
		return stream.Send(ToProto(snap))
	})
	// Once ctx has ended, a Send error is only a symptom of it.
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errShutdown) {
			return errShuttingDown()
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	if errors.Is(err, report.ErrStopped) {
		// No snapshot will follow: end the stream rather than let it
		// fall silent, and let the client retry elsewhere.
		return status.Error(codes.Unavailable, "slotgate's load hub stopped")
	}
	return err
}

func errShuttingDown() error {
	return status.Error(codes.Unavailable, "slotgate is shutting down")
}
