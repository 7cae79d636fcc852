package sim

import (
	"context"
	"time"
)

// run is the rank's scheduling loop: plan a step, wait its duration on a
// timer, apply it; sleep on wake while there is nothing to run. It returns
// when ctx ends, after failing every unfinished request with ErrStopped.
// The timer makes steps follow the clock of a testing/synctest bubble.
func (r *rank) run(ctx context.Context) {
	defer r.stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		r.mu.Lock()
		st := r.schedule()
		if st == nil {
			r.last = lastStep{}
		}
		r.mu.Unlock()
		if st == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		timer.Reset(st.duration)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		r.finish(st)
	}
}

// finish applies a step whose time has passed and records its iteration
// stats.
func (r *rank) finish(st *step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ended := r.complete(st)
	if r.iters != nil {
		r.iters.push(r.iterationStats(st, ended, time.Now()))
	}
}
