package eventplane

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// rankState is what the tracker knows of one rank.
type rankState struct {
	// known is false while the rank's count is unknown: it is then not
	// published, not even by the heartbeat.
	known  bool
	latest uint64
	// pending is set while a publication is due at deadline: the latest
	// count, preceded by peak when peak is higher (a spike inside the
	// window).
	pending  bool
	deadline time.Time
	peak     uint64
	// base is the count before the window opened, when there was one: a
	// peak below it is no spike (the count only fell).
	base    uint64
	hasBase bool
}

// tracker turns snapshots into the ActiveLoads to publish, rank by rank:
// a change opens a debounce window, which ends with the window's peak (if
// the count fell back from it) and the latest count. It is not safe for
// concurrent use.
type tracker struct {
	debounce time.Duration
	ranks    map[uint32]*rankState
}

func newTracker(debounce time.Duration) *tracker {
	return &tracker{debounce: debounce, ranks: map[uint32]*rankState{}}
}

// observe records a snapshot's counts at now.
func (t *tracker) observe(s *report.Snapshot, now time.Time) {
	for i := range s.Ranks {
		r := &s.Ranks[i]
		if r.DPRank < 0 || uint64(r.DPRank) > math.MaxUint32 {
			continue
		}
		st := t.ranks[uint32(r.DPRank)]
		if st == nil {
			st = &rankState{}
			t.ranks[uint32(r.DPRank)] = st
		}
		if !r.KVUsedBlocks.Known() || r.KVUsedBlocks.N < 0 {
			// Unknown is never published as 0; whatever was due is
			// dropped, since it no longer says what the engine holds.
			*st = rankState{}
			continue
		}
		v := uint64(r.KVUsedBlocks.N)
		if st.known && v == st.latest {
			continue
		}
		if !st.pending {
			st.base, st.hasBase = st.latest, st.known
			st.pending, st.deadline, st.peak = true, now.Add(t.debounce), v
			st.known, st.latest = true, v
			continue
		}
		st.latest = v
		st.peak = max(st.peak, v)
	}
}

// refresh makes every known rank due at now with its latest count: the
// heartbeat, and the first publication on a new connection. A rank with
// a change already due keeps it, unless all is set: then whatever was due
// is replaced by the latest count (after a reconnection, an older peak
// is history).
func (t *tracker) refresh(now time.Time, all bool) {
	for _, st := range t.ranks {
		if !st.known || (st.pending && !all) {
			continue
		}
		st.pending, st.deadline, st.peak, st.hasBase = true, now, st.latest, false
	}
}

// nextDeadline is the earliest time a publication is due; false when none
// is.
func (t *tracker) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, st := range t.ranks {
		if st.pending && (!found || st.deadline.Before(next)) {
			next, found = st.deadline, true
		}
	}
	return next, found
}

// due returns the loads due at now, by rank, each rank's peak before its
// latest count, and clears them.
func (t *tracker) due(now time.Time, workerID uint64) []ActiveLoad {
	var out []ActiveLoad
	for _, rank := range slices.Sorted(maps.Keys(t.ranks)) {
		st := t.ranks[rank]
		if !st.pending || st.deadline.After(now) {
			continue
		}
		if st.peak > st.latest && (!st.hasBase || st.peak > st.base) {
			out = append(out, ActiveLoad{WorkerID: workerID, DPRank: rank, KVUsedBlocks: st.peak})
		}
		out = append(out, ActiveLoad{WorkerID: workerID, DPRank: rank, KVUsedBlocks: st.latest})
		st.pending = false
	}
	return out
}
