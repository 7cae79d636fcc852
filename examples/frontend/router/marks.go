package router

import (
	"sync"
	"time"
)

// marks holds the overload marks a worker's 529 sets. Each mark is the
// instant it ends: nothing clears it and nothing needs to, because every
// reader compares it with the clock. This is the fix for Dynamo's stale
// marks (#14213): there, a mark was a flag that only the worker's next
// load event cleared, and a worker that published no event stayed
// excluded, answering 529 to every client for as long as it stayed idle.
type marks struct {
	cooldown time.Duration
	mu       sync.Mutex
	until    map[string]time.Time
}

func newMarks(cooldown time.Duration) *marks {
	return &marks{cooldown: cooldown, until: make(map[string]time.Time)}
}

// mark marks name overloaded from now for the cooldown. A later 529
// extends the mark; an earlier one never shortens it.
func (m *marks) mark(name string, now time.Time) {
	end := now.Add(m.cooldown)
	m.mu.Lock()
	defer m.mu.Unlock()
	if end.After(m.until[name]) {
		m.until[name] = end
	}
}

// marked reports whether name's mark is still running at now.
func (m *marks) marked(name string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return now.Before(m.until[name])
}
