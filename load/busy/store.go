package busy

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Store holds the thresholds in force. It is safe for concurrent use. It
// only ever holds thresholds that pass Validate.
//
// Whoever must act on a change (the hub that publishes the busy state)
// is told through the onChange callback given to NewStore, as the other
// load sources tell it theirs, and then calls Load.
type Store struct {
	// cur is replaced whole, never written through, so Load needs no lock.
	cur atomic.Pointer[Thresholds]
	// mu serializes updates, so that a merge never works on a value
	// another update is replacing.
	mu       sync.Mutex
	onChange func()
}

// NewStore returns a Store holding a copy of initial, or an error, from
// Validate, when initial is invalid. onChange, when not nil, is called
// after every update that alters a value, once the new value is in force
// and outside the Store's lock, from the goroutine that made the update
// (the handler's): it must not block.
func NewStore(initial Thresholds, onChange func()) (*Store, error) {
	if err := initial.Validate(); err != nil {
		return nil, fmt.Errorf("busy thresholds: %w", err)
	}
	if onChange == nil {
		onChange = func() {}
	}
	s := &Store{onChange: onChange}
	v := initial.clone()
	s.cur.Store(&v)
	return s, nil
}

// Load returns the thresholds in force. The copy is the caller's: writing
// through its pointers does not change the store.
func (s *Store) Load() Thresholds {
	return s.cur.Load().clone()
}

// Update overwrites the thresholds that patch sets (non-nil fields) and
// keeps the others, so a check cannot be turned off through Update
// (Dynamo's API cannot either). It returns the thresholds now in force.
//
// When the result fails Validate, Update returns the zero Thresholds and
// the error, and the store is unchanged: an update is all or nothing.
// onChange is called only when a value actually changed.
func (s *Store) Update(patch Thresholds) (Thresholds, error) {
	_, now, err := s.update(patch)
	return now, err
}

// update is Update that also returns the value it replaced, for the
// handler's log line: reading it separately could race another update.
func (s *Store) update(patch Thresholds) (old, now Thresholds, err error) {
	old, now, changed, err := s.swap(patch)
	if changed {
		// After the store, so that the callee's Load sees this value or a
		// later one; outside the lock, so that a callee may Load or
		// Update without deadlock.
		s.onChange()
	}
	return old, now, err
}

// swap applies patch under the lock and reports whether a value changed.
func (s *Store) swap(patch Thresholds) (old, now Thresholds, changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	next := cur.merge(patch)
	if err := next.Validate(); err != nil {
		return Thresholds{}, Thresholds{}, false, err
	}
	if next.equal(*cur) {
		return cur.clone(), cur.clone(), false, nil
	}
	s.cur.Store(&next)
	return cur.clone(), next.clone(), true, nil
}
