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
}

func newDrainer(log *zap.Logger) *drainer {
	return &drainer{log: log, begun: make(chan struct{})}
}

// start begins draining; it returns at once and is safe to call again.
func (d *drainer) start() {
	d.once.Do(func() {
		close(d.begun)
		d.log.Info("draining: readiness now fails; new requests are still served for the drain delay")
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
