package router

import (
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/load/watch"
)

// workerState is a worker and the router's counters for it.
type workerState struct {
	Worker
	inFlight  atomic.Int64 // requests this router has open there now
	sent      atomic.Int64 // attempts sent there
	got529    atomic.Int64 // 529s it answered
	excluded  atomic.Int64 // picks that left it out, busy or marked
	busyFlips atomic.Int64 // turns from not busy to busy
	lastBusy  bool         // owned by countFlips
}

// counters are the router's totals.
type counters struct {
	requests    atomic.Int64 // requests received
	client529   atomic.Int64 // 529s this router answered to clients
	client503   atomic.Int64 // 503s this router answered to clients
	worker529   atomic.Int64 // 529s received from workers
	absorbed529 atomic.Int64 // workers' 529s followed by a retry on another worker
	retries     atomic.Int64 // retries, for any cause
	exclusions  atomic.Int64 // workers left out of a pick because busy or marked
}

// Stats is what GET /frontend/stats answers: the router's counters since
// it started, and what it knows of each worker now.
type Stats struct {
	Policy      Policy        `json:"policy"`
	CooldownSec float64       `json:"cooldown_seconds"`
	Requests    int64         `json:"requests"`
	Client529   int64         `json:"client_529"`
	Client503   int64         `json:"client_503"`
	Worker529   int64         `json:"worker_529"`
	Absorbed529 int64         `json:"absorbed_529"`
	Retries     int64         `json:"retries"`
	Exclusions  int64         `json:"exclusions"`
	BusyFlips   int64         `json:"busy_flips"`
	Workers     []WorkerStats `json:"workers"`
}

// WorkerStats is one worker in Stats.
type WorkerStats struct {
	Name      string `json:"name"`
	Proxy     string `json:"proxy"`
	Admin     string `json:"admin"`
	State     string `json:"state"` // unknown, fresh or expired
	Busy      bool   `json:"busy"`
	Marked    bool   `json:"marked"`
	InFlight  int64  `json:"frontend_in_flight"`
	Sent      int64  `json:"sent"`
	Got529    int64  `json:"worker_529"`
	Excluded  int64  `json:"excluded"`
	BusyFlips int64  `json:"busy_flips"`
	// Load is the worker's newest snapshot, in short; nil while unknown.
	Load *Load `json:"load,omitempty"`
}

// Load is the part of a worker's snapshot the live view shows.
type Load struct {
	InFlight     int     `json:"in_flight"`
	Limit        int     `json:"limit"`
	Prefilling   int     `json:"prefilling"`
	WaitingLimit int     `json:"waiting_limit"`
	Queued       int     `json:"queued"`
	QueueLimit   int     `json:"queue_limit"`
	KVUsage      float64 `json:"kv_usage"` // 0..1; -1 when unknown
}

// Stats returns the counters and the workers' state now.
func (r *Router) Stats() Stats {
	c := &r.counters
	s := Stats{
		Policy: r.policy, CooldownSec: r.cooldown.Seconds(),
		Requests: c.requests.Load(), Client529: c.client529.Load(), Client503: c.client503.Load(),
		Worker529: c.worker529.Load(), Absorbed529: c.absorbed529.Load(), Retries: c.retries.Load(),
		Exclusions: c.exclusions.Load(), Workers: make([]WorkerStats, 0, len(r.workers)),
	}
	now := time.Now()
	for _, ws := range r.workers {
		st, _ := r.watcher.Status(ws.Name)
		w := WorkerStats{
			Name: ws.Name, Proxy: ws.Proxy, Admin: ws.Admin, State: st.State.String(),
			Busy: st.State == watch.Fresh && st.Busy, Marked: r.marks.marked(ws.Name, now),
			InFlight: ws.inFlight.Load(), Sent: ws.sent.Load(), Got529: ws.got529.Load(),
			Excluded: ws.excluded.Load(), BusyFlips: ws.busyFlips.Load(),
		}
		if snap := st.Snapshot; snap != nil {
			q := snap.Requests
			w.Load = &Load{InFlight: q.InFlight, Limit: q.Limit, Prefilling: q.Prefilling, WaitingLimit: q.WaitingLimit,
				Queued: q.Queued, QueueLimit: q.QueueLimit, KVUsage: -1}
			if kv, ok := snap.KVUsage(); ok {
				w.Load.KVUsage = kv
			}
		}
		s.BusyFlips += w.BusyFlips
		s.Workers = append(s.Workers, w)
	}
	return s
}
