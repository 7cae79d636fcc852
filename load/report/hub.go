package report

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Defaults of HubOptions.
const (
	// MinInterval is the shortest time between two published snapshots:
	// changes within it are published together, at its end.
	MinInterval = 10 * time.Millisecond
	// Heartbeat is the longest time between two published snapshots: a
	// snapshot is published this often even when nothing changed.
	Heartbeat = time.Second
	// TTLHeartbeats is the default TTL in heartbeats: a reader keeps
	// trusting a snapshot through two lost heartbeats, and no longer.
	TTLHeartbeats = 3
)

// HubOptions configure a Hub.
type HubOptions struct {
	// Compute returns the current load; Seq, At, Epoch and TTL are set by
	// the Hub.
	// Required. It is called from Run's goroutine only, and from NewHub.
	Compute func() Snapshot
	// MinInterval and Heartbeat override the package defaults when set.
	MinInterval, Heartbeat time.Duration
	// Epoch is stamped on every snapshot (Snapshot.Epoch). 0, the usual
	// value, has NewHub draw a random one: slotgate makes one Hub per
	// process, so the Hub's epoch is the process's boot id.
	Epoch uint64
	// TTL is stamped on every snapshot (Snapshot.TTL); 0 means
	// TTLHeartbeats heartbeats. It may not be shorter than Heartbeat, or
	// a healthy worker's snapshots would expire between two heartbeats.
	TTL time.Duration
	// OnPublish, when set, is called from Run's goroutine with every
	// snapshot published, before watchers are woken. It must not block.
	OnPublish func(*Snapshot)
}

// Hub publishes snapshots to any number of watchers. Run computes them;
// Notify, Latest and Watch are safe from any goroutine.
type Hub struct {
	opts    HubOptions
	state   atomic.Pointer[published]
	notify  chan struct{}
	running atomic.Bool
	stopped chan struct{} // closed when Run returns

	// lastCompute is when Compute last ran (owned by Run's goroutine after
	// NewHub): computations, not only publications, are kept MinInterval
	// apart, so a storm of notifications that change nothing costs at
	// most one computation per interval.
	lastCompute time.Time
}

// ErrStopped is returned by Watch once Run has returned: no snapshot will
// follow, and a stream should end rather than fall silent.
var ErrStopped = errors.New("report: hub stopped")

// published is one snapshot and the channel closed when the next one is
// published: a broadcast that never blocks the publisher, whatever the
// number or speed of the watchers.
type published struct {
	snap *Snapshot
	next chan struct{}
}

// NewHub checks opts and returns a Hub holding its first snapshot, Seq 1.
// It starts nothing.
func NewHub(opts HubOptions) (*Hub, error) {
	if opts.Compute == nil {
		return nil, errors.New("report: HubOptions.Compute is required")
	}
	if opts.MinInterval < 0 || opts.Heartbeat < 0 {
		return nil, errors.New("report: MinInterval and Heartbeat must not be negative")
	}
	if opts.MinInterval == 0 {
		opts.MinInterval = MinInterval
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = Heartbeat
	}
	if err := defaultStamps(&opts); err != nil {
		return nil, err
	}
	h := &Hub{opts: opts, notify: make(chan struct{}, 1), stopped: make(chan struct{})}
	first := opts.Compute()
	h.stamp(&first)
	first.Seq, first.At = 1, time.Now()
	h.lastCompute = first.At
	h.state.Store(&published{snap: &first, next: make(chan struct{})})
	return h, nil
}

// defaultStamps fills in opts' Epoch and TTL, once Heartbeat is set, and
// checks the TTL.
func defaultStamps(opts *HubOptions) error {
	for opts.Epoch == 0 { // 0 is "no epoch": draw again (1 in 2^64)
		opts.Epoch = rand.Uint64()
	}
	switch {
	case opts.TTL == 0:
		opts.TTL = TTLHeartbeats * opts.Heartbeat
	case opts.TTL < opts.Heartbeat:
		return fmt.Errorf("report: TTL %s is shorter than the heartbeat %s: snapshots would expire between heartbeats",
			opts.TTL, opts.Heartbeat)
	}
	return nil
}

// stamp sets the publisher's fields that are the same in every snapshot.
func (h *Hub) stamp(s *Snapshot) { s.Epoch, s.TTL = h.opts.Epoch, h.opts.TTL }

// Notify tells the Hub that the load may have changed. It never blocks;
// notifications that arrive before Run handles the previous one merge.
// It is the Hub's one input: the load's sources (the scraper, the flights,
// the busy thresholds) are each given it as their onChange callback, a
// plain func() that must not block, and Compute confirms what changed.
func (h *Hub) Notify() {
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// Latest returns the latest published snapshot. The caller must not
// modify it.
func (h *Hub) Latest() *Snapshot { return h.state.Load().snap }

// Watch calls f with the latest snapshot and then with each newer one
// until ctx ends or f returns an error, which Watch returns (ctx.Err()
// when ctx ended, ErrStopped once Run has returned). A slow f skips snapshots rather than slowing the Hub:
// it always gets the latest, and Seq tells how many it missed.
func (h *Hub) Watch(ctx context.Context, f func(*Snapshot) error) error {
	cur := h.state.Load()
	for {
		if err := f(cur.snap); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.stopped:
			return ErrStopped
		case <-cur.next:
			cur = h.state.Load()
		}
	}
}

// Run publishes a snapshot whenever Notify reports a change that Compute
// confirms, at most once per MinInterval, and at least once per
// Heartbeat, until ctx ends; it then returns nil. Run may be called once.
func (h *Hub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("report: Hub.Run called twice")
	}
	defer close(h.stopped)
	heartbeat := time.NewTimer(h.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		beat := false
		select {
		case <-ctx.Done():
			return nil
		case <-h.notify:
		case <-heartbeat.C:
			beat = true
		}
		if !h.waitMinInterval(ctx) {
			return nil
		}
		if h.publishIfChanged(beat) {
			heartbeat.Reset(h.opts.Heartbeat)
		}
	}
}

// waitMinInterval waits until MinInterval has passed since the last
// computation; it reports false when ctx ended first.
func (h *Hub) waitMinInterval(ctx context.Context) bool {
	wait := h.opts.MinInterval - time.Since(h.lastCompute)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// publishIfChanged computes the load and publishes it if it changed, or
// if force (a heartbeat). It reports whether it published.
func (h *Hub) publishIfChanged(force bool) bool {
	// Notifications until now are covered by this computation.
	select {
	case <-h.notify:
	default:
	}
	prev := h.state.Load()
	next := h.opts.Compute()
	h.lastCompute = time.Now()
	if !force && next.SameLoad(prev.snap) {
		return false
	}
	h.stamp(&next)
	next.Seq, next.At = prev.snap.Seq+1, time.Now()
	if h.opts.OnPublish != nil {
		h.opts.OnPublish(&next)
	}
	h.state.Store(&published{snap: &next, next: make(chan struct{})})
	close(prev.next)
	return true
}
