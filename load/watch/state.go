package watch

import (
	"slices"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// State says whether what the watcher knows of a worker is still fresh.
type State uint8

// The states of a watched worker.
const (
	// Unknown: no snapshot has arrived since the worker was added.
	Unknown State = iota
	// Fresh: the newest snapshot arrived less than Expiry ago.
	Fresh
	// Expired: the newest snapshot arrived Expiry ago or more. It is kept,
	// and reported, but decides nothing.
	Expired
)

func (s State) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Fresh:
		return "fresh"
	case Expired:
		return "expired"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Status is what the watcher knows of one worker, and so why it is or is
// not eligible.
type Status struct {
	// State says whether Snapshot is still fresh.
	State State
	// Busy is Snapshot's busy verdict; false while Unknown. It counts
	// only while Fresh: an expired worker is neither busy nor eligible.
	Busy bool
	// Snapshot is the newest snapshot received, nil while Unknown. It is
	// shared: do not modify it.
	Snapshot *report.Snapshot
	// Received is when Snapshot arrived, on the watcher's clock; zero
	// while Unknown.
	Received time.Time
	// Connected reports that a stream to the sidecar is open now. A
	// worker may stay Fresh for a while without one, until Expiry.
	Connected bool
}

// Eligible reports whether the worker may be sent requests: Fresh and
// not busy.
func (s Status) Eligible() bool { return s.State == Fresh && !s.Busy }

// Status returns what the watcher knows of name; ok is false when name is
// not watched.
func (w *Watcher) Status(name string) (st Status, ok bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	wk := w.workers[name]
	if wk == nil {
		return Status{}, false
	}
	return w.statusLocked(wk, now), true
}

// Load returns name's newest snapshot (nil while Unknown; shared: do not
// modify it) and its state; ok is false when name is not watched.
func (w *Watcher) Load(name string) (snap *report.Snapshot, state State, ok bool) {
	st, ok := w.Status(name)
	return st.Snapshot, st.State, ok
}

// Busy returns the busy set, sorted: the workers whose snapshot is Fresh
// and says busy.
func (w *Watcher) Busy() []string {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var busy []string
	for name, wk := range w.workers {
		if st := w.statusLocked(wk, now); st.State == Fresh && st.Busy {
			busy = append(busy, name)
		}
	}
	slices.Sort(busy)
	return busy
}

// Eligible returns the workers among candidates that may be sent
// requests, in the order given, duplicates kept: watched, Fresh and not
// busy. Unknown, expired, busy and unwatched names are left out; Status
// says which of these a worker is. When no candidate is eligible the
// result is empty, never the candidates: whether to fall back (send
// anyway, queue, or answer 529 as Dynamo does) is the caller's decision.
func (w *Watcher) Eligible(candidates []string) []string {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(candidates))
	for _, name := range candidates {
		if wk := w.workers[name]; wk != nil && w.statusLocked(wk, now).Eligible() {
			out = append(out, name)
		}
	}
	return out
}

func (w *Watcher) statusLocked(wk *worker, now time.Time) Status {
	st := Status{State: Unknown, Snapshot: wk.snap, Received: wk.received, Connected: wk.connected}
	if wk.snap != nil {
		st.State, st.Busy = Fresh, wk.snap.Busy
		if now.Sub(wk.received) >= w.expiry {
			st.State = Expired
		}
	}
	return st
}
