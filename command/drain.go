package command

import (
	"sync"

	"go.uber.org/zap"
)

// drainer records that draining has begun, from SIGTERM or POST /drain,
// whichever comes first. The run loop reacts to begun.
type drainer struct {
	log   *zap.Logger
	once  sync.Once
	begun chan struct{}
	// closeConns makes every answer from then on close its connection
	// (proxy.Proxy.CloseConnections): kept connections would outlive the
	// endpoint update, so each client connects again through the updated
	// endpoints. It runs before start returns, so that the answer after
	// POST /drain closes its connection.
	closeConns func()
}

func newDrainer(log *zap.Logger, closeConns func()) *drainer {
	return &drainer{log: log, begun: make(chan struct{}), closeConns: closeConns}
}

// start begins draining; it returns at once and is safe to call again.
func (d *drainer) start() {
	d.once.Do(func() {
		d.closeConns()
		close(d.begun)
		d.log.Info("draining: readiness now fails; new requests are still served for the drain delay, closing their connections")
	})
}

// started reports whether start was called: begun is closed.
func (d *drainer) started() bool {
	select {
	case <-d.begun:
		return true
	default:
		return false
	}
}
