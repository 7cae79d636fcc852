package busy

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Store holds the thresholds in force. It is safe for concurrent use. It
// only ever holds thresholds that pass Validate.
//
// Readers that must act on a change (the loop that publishes the busy
// state) wait on Changed:
//
//	for {
//		changed := store.Changed() // before Load, so no change is missed
//		res := ev.Evaluate(store.Load(), ranks())
//		publish(res)
//		select {
//		case <-changed:
//		case <-tick.C:
//		case <-ctx.Done():
//			return ctx.Err()
//		}
//	}
type Store struct {
	// cur is replaced whole, never written through, so Load needs no lock.
	cur atomic.Pointer[Thresholds]
	// mu serializes updates, so that a merge never works on a value
	// another update is replacing, and guards changed.
	mu sync.Mutex
	// changed is closed at the next change and then replaced.
	changed chan struct{}
}

// NewStore returns a Store holding a copy of initial, or an error, from
// Validate, when initial is invalid.
func NewStore(initial Thresholds) (*Store, error) {
	if err := initial.Validate(); err != nil {
		return nil, fmt.Errorf("busy thresholds: %w", err)
	}
	s := &Store{changed: make(chan struct{})}
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
// Changed is signalled only when a value actually changed.
func (s *Store) Update(patch Thresholds) (Thresholds, error) {
	_, now, err := s.update(patch)
	return now, err
}

// update is Update that also returns the value it replaced, for the
// handler's log line: reading it separately could race another update.
func (s *Store) update(patch Thresholds) (old, now Thresholds, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	next := cur.merge(patch)
	if err := next.Validate(); err != nil {
		return Thresholds{}, Thresholds{}, err
	}
	if next.equal(*cur) {
		return cur.clone(), cur.clone(), nil
	}
	// Store before signalling: whoever wakes up must Load the new value.
	s.cur.Store(&next)
	close(s.changed)
	s.changed = make(chan struct{})
	return cur.clone(), next.clone(), nil
}

// Changed returns a channel that is closed at the next change of the
// thresholds. Any number of goroutines may wait on it. Call it before Load:
// a change after the call closes the channel, so none goes unnoticed.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
