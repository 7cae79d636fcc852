package command

import (
	"runtime"

	"go.uber.org/zap"
)

// relayProcessors gives each of the stream relay's loops a processor of
// its own: a loop busy with streams waits for their events holding its
// processor (relay.New), as an event loop's thread does, so GOMAXPROCS is
// raised by the loops' number and --max-procs stays what the rest of
// slotgate runs on. Setting GOMAXPROCS ends Go's own updates of it (after
// a changed CPU limit), with --max-procs auto too: the figure is the one
// at start-up. It returns the function that puts GOMAXPROCS back,
// for when Run returns (a test's process runs Run again). Without the
// relay it changes nothing.
func (a *app) relayProcessors() (restore func()) {
	if a.relay == nil || a.relay.Loops() == 0 {
		return func() {}
	}
	procs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(procs + a.relay.Loops())
	a.log.Info("stream relay", zap.Int("loops", a.relay.Loops()), zap.Int("gomaxprocs", procs+a.relay.Loops()))
	return func() { runtime.GOMAXPROCS(procs) }
}
