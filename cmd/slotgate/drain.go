package main

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// drainer records that draining has begun, from SIGTERM or POST /drain,
// whichever comes first. The run loop reacts to begun.
type drainer struct {
	log   *zap.Logger
	once  sync.Once
	flag  atomic.Bool
	begun chan struct{}
}

func newDrainer(log *zap.Logger) *drainer {
	return &drainer{log: log, begun: make(chan struct{})}
}

// start begins draining; it returns at once and is safe to call again.
func (d *drainer) start() {
	d.once.Do(func() {
		d.flag.Store(true)
		d.log.Info("draining: readiness now fails; new requests are still served for the drain delay")
		close(d.begun)
	})
}

func (d *drainer) started() bool { return d.flag.Load() }
