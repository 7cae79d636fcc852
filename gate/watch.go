package gate

import (
	"context"
	"sync"
)

// watcher starts a request's Watch at most once, when the request has to
// wait: from the limiter's OnQueued, or from the classifier's deferral
// timer, which runs on a goroutine of its own, hence the lock.
type watcher struct {
	watch Watch // nil: nothing to watch but the context
	fail  func(error)

	mu       sync.Mutex
	begun    bool
	timerOff bool // the deferral timer may no longer start the watch
}

func newWatcher(w Watch, cancel context.CancelCauseFunc) *watcher {
	return &watcher{watch: w, fail: cancel}
}

// start begins the watch unless it has begun.
func (w *watcher) start() { w.begin(false) }

// startFromTimer is the deferral timer's start: it does nothing once
// stopTimer was called, so a timer that fires late cannot start a watch
// the request no longer expects.
func (w *watcher) startFromTimer() { w.begin(true) }

// stopTimer ends the deferral timer's say.
func (w *watcher) stopTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timerOff = true
}

func (w *watcher) begin(fromTimer bool) {
	if w.watch == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.begun || fromTimer && w.timerOff {
		return
	}
	w.begun = true
	w.watch.Start(w.fail)
}

// started reports whether the watch was started.
func (w *watcher) started() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.begun
}

// settle ends a started watch and returns its error; it does nothing for a
// watch that never started.
func (w *watcher) settle(cut bool) error {
	if !w.started() {
		return nil
	}
	return w.watch.Settle(cut)
}

// gone reports whether the watch knows the client left.
func (w *watcher) gone() bool { return w.watch != nil && w.watch.Gone() }
