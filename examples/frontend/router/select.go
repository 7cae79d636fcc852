package router

import (
	"errors"
	"time"

	"github.com/slotgate/slotgate/load/watch"
)

// The two reasons a pick finds no worker; answer maps them to statuses.
var (
	// errOverloaded: workers are known, but every eligible one is busy,
	// marked or already tried by this request (Dynamo: 529).
	errOverloaded = errors.New("every worker is busy or marked overloaded")
	// errUnavailable: no worker is registered, or none has a fresh load
	// snapshot (Dynamo: 503).
	errUnavailable = errors.New("no worker registered or reachable")
)

// pick chooses the worker for one attempt of a request; tried holds the
// workers its earlier attempts went to, which it never picks again.
func (r *Router) pick(tried map[string]bool) (*workerState, error) {
	if r.policy == PolicyRoundRobin {
		return r.pickRoundRobin(tried)
	}
	return r.pickLeastLoaded(tried, time.Now())
}

// pickRoundRobin takes the next worker in rotation that this request has
// not tried, whatever its load, state or mark.
func (r *Router) pickRoundRobin(tried map[string]bool) (*workerState, error) {
	n := uint64(len(r.workers))
	if n == 0 {
		return nil, errUnavailable
	}
	start := r.next.Add(1) - 1
	for i := range n {
		if ws := r.workers[(start+i)%n]; !tried[ws.Name] {
			return ws, nil
		}
	}
	return nil, errOverloaded
}

// candidate is an eligible worker and its load figures.
type candidate struct {
	ws   *workerState
	load float64 // (in flight + queued) / N
	kv   float64 // KV cache use, 0..1; 1 when unknown
}

// pickLeastLoaded leaves out the workers not fresh, busy, marked or tried,
// and returns the least loaded of the rest. Each fresh worker left out
// because busy or marked counts as an exclusion.
func (r *Router) pickLeastLoaded(tried map[string]bool, now time.Time) (*workerState, error) {
	var best *candidate
	fresh := 0
	// Start each scan at a rotating position so that equal loads share
	// the traffic instead of all landing on the first worker.
	n := uint64(len(r.workers))
	start := r.next.Add(1) - 1
	for i := range n {
		ws := r.workers[(start+i)%n]
		st, _ := r.watcher.Status(ws.Name)
		if st.State != watch.Fresh {
			continue
		}
		fresh++
		if tried[ws.Name] {
			continue
		}
		if st.Busy || r.marks.marked(ws.Name, now) {
			ws.excluded.Add(1)
			r.counters.exclusions.Add(1)
			continue
		}
		c := r.figures(ws, st)
		if best == nil || c.less(best) {
			best = &c
		}
	}
	switch {
	case best != nil:
		return best.ws, nil
	case fresh == 0:
		return nil, errUnavailable
	}
	return nil, errOverloaded
}

// figures reads a fresh worker's load. The snapshot's in-flight and queued
// count may lag the requests this router sent a moment ago, so the
// router's own count there is the floor: the router is not the only
// client a worker may have, but it is one.
func (r *Router) figures(ws *workerState, st watch.Status) candidate {
	c := candidate{ws: ws, kv: 1}
	snap := st.Snapshot
	used := int64(snap.Requests.InFlight + snap.Requests.Queued)
	used = max(used, ws.inFlight.Load())
	if limit := snap.Requests.Limit; limit > 0 {
		c.load = float64(used) / float64(limit)
	} else {
		c.load = float64(used)
	}
	if kv, ok := snap.KVUsage(); ok {
		c.kv = kv
	}
	return c
}

// less orders candidates by load, then KV use; ties keep the earlier one
// in the rotated scan.
func (c *candidate) less(o *candidate) bool {
	if c.load != o.load {
		return c.load < o.load
	}
	return c.kv < o.kv
}
