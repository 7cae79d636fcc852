package limiter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// White-box tests: these check what the public API cannot show
// deterministically, namely the FIFO list itself and the outcome of wait
// when a grant and the end of the wait are both ready in the same instant
// (which of the select cases runs is random, so each case is repeated).

func TestFIFOQueue(t *testing.T) {
	tests := []struct {
		name   string
		push   int
		remove []int // indexes of pushed waiters to remove, in this order
		want   []int // indexes left, in pop order
	}{
		{name: "empty", push: 0, want: nil},
		{name: "one", push: 1, want: []int{0}},
		{name: "order kept", push: 4, want: []int{0, 1, 2, 3}},
		{name: "remove head", push: 3, remove: []int{0}, want: []int{1, 2}},
		{name: "remove middle", push: 3, remove: []int{1}, want: []int{0, 2}},
		{name: "remove tail", push: 3, remove: []int{2}, want: []int{0, 1}},
		{name: "remove only", push: 1, remove: []int{0}, want: nil},
		{name: "remove all", push: 3, remove: []int{1, 0, 2}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fifo
			ws := make([]*waiter, tt.push)
			index := map[*waiter]int{}
			for i := range ws {
				ws[i] = &waiter{}
				index[ws[i]] = i
				f.push(ws[i])
			}
			for _, i := range tt.remove {
				f.remove(ws[i])
				if ws[i].prev != nil || ws[i].next != nil {
					t.Errorf("removed waiter %d keeps links", i)
				}
			}
			var got []int
			for w := f.pop(); w != nil; w = f.pop() {
				got = append(got, index[w])
			}
			if !equalInts(got, tt.want) {
				t.Errorf("pop order = %v, want %v", got, tt.want)
			}
			if f.head != nil || f.tail != nil {
				t.Errorf("drained queue has head %p tail %p", f.head, f.tail)
			}
			// The queue is reusable after draining.
			w := &waiter{}
			f.push(w)
			if got := f.pop(); got != w {
				t.Errorf("pop after reuse = %p, want %p", got, w)
			}
		})
	}
}

// enqueue queues a new waiter of class c, as AcquireRequest does.
func (l *Limiter) enqueue(c int, cost int64) *waiter {
	w := &waiter{ready: make(chan struct{}), cls: &l.classes[c], cost: cost}
	l.queue.push(w)
	l.waiting++
	w.cls.waiting++
	return w
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWaitOutcomeWhenEverythingIsReady drives wait with a waiter whose grant,
// context end and deadline are all settled before wait runs, so select sees
// several ready cases at once and picks one at random. Every pick must give
// the documented outcome:
//
//   - granted + context ended: cancellation wins, the slot is handed on;
//   - granted + deadline passed: the slot arrived in time and is kept;
//   - granted + context ended + deadline passed: still a cancelled caller,
//     which must never hold a slot;
//   - not granted: the waiter leaves the queue; a context that ended is
//     reported as ctx.Err() even if the deadline passed too.
func TestWaitOutcomeWhenEverythingIsReady(t *testing.T) {
	const rounds = 200 // 3 ready cases: P(missing one) ~ 3*(2/3)^200
	tests := []struct {
		name        string
		granted     bool
		cancelled   bool
		expired     bool
		nextWaiter  bool // another waiter queued behind w
		wantErr     error
		wantHolding int
		wantWaiting int
		wantStats   Stats // counters only
	}{
		{
			name: "granted and cancelled, slot goes back to free", granted: true, cancelled: true,
			wantErr: context.Canceled, wantHolding: 0,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "granted and cancelled, slot goes to next waiter", granted: true, cancelled: true, nextWaiter: true,
			wantErr: context.Canceled, wantHolding: 1, wantWaiting: 0,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "granted and expired, slot kept", granted: true, expired: true,
			wantErr: nil, wantHolding: 1,
			wantStats: Stats{AdmittedQueued: 1},
		},
		{
			name: "granted, cancelled and expired, cancellation wins", granted: true, cancelled: true, expired: true,
			wantErr: context.Canceled, wantHolding: 0,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "granted, cancelled and expired with next waiter", granted: true, cancelled: true, expired: true, nextWaiter: true,
			wantErr: context.Canceled, wantHolding: 1, wantWaiting: 0,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "granted only", granted: true,
			wantErr: nil, wantHolding: 1,
			wantStats: Stats{AdmittedQueued: 1},
		},
		{
			name: "not granted, cancelled", cancelled: true,
			wantErr: context.Canceled, wantHolding: 1,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "not granted, expired", expired: true,
			wantErr: ErrQueueTimeout, wantHolding: 1,
			wantStats: Stats{TimedOut: 1},
		},
		{
			name: "not granted, cancelled and expired", cancelled: true, expired: true,
			wantErr: context.Canceled, wantHolding: 1,
			wantStats: Stats{CancelledWaiting: 1},
		},
		{
			name: "not granted, cancelled, next waiter stays", cancelled: true, nextWaiter: true,
			wantErr: context.Canceled, wantHolding: 1, wantWaiting: 1,
			wantStats: Stats{CancelledWaiting: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range rounds {
				l, err := New(Options{Slots: 1, QueueLen: 2})
				if err != nil {
					t.Fatal(err)
				}
				// One holder and w queued behind it, as AcquireRequest
				// leaves them.
				l.holding, l.prefilling = 1, 1
				w := l.enqueue(0, 1)
				var next *waiter
				if tt.nextWaiter {
					next = l.enqueue(0, 1)
				}
				if tt.granted {
					// The holder releases: the slot is handed to w.
					l.releaseSlot(true, 0)
					if !w.granted {
						t.Fatal("release did not hand the slot to the waiter")
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				if tt.cancelled {
					cancel()
				}
				var deadline time.Time
				if tt.expired {
					deadline = time.Now().Add(-time.Second)
				}

				release, err := l.wait(ctx, w, deadline, ErrQueueTimeout)
				cancel()

				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Fatalf("round %d: wait error = %v, want %v", round, err, tt.wantErr)
				}
				if (release != nil) != (tt.wantErr == nil) {
					t.Fatalf("round %d: release is nil = %t with error %v", round, release == nil, err)
				}
				if err := l.CheckInvariants(); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				s := l.Stats()
				if s.Holding != tt.wantHolding || s.Waiting != tt.wantWaiting {
					t.Fatalf("round %d: holding, waiting = %d, %d, want %d, %d", round, s.Holding, s.Waiting, tt.wantHolding, tt.wantWaiting)
				}
				if s.AdmittedQueued != tt.wantStats.AdmittedQueued || s.TimedOut != tt.wantStats.TimedOut ||
					s.CancelledWaiting != tt.wantStats.CancelledWaiting || s.AdmittedDirect != 0 || s.RejectedFull != 0 {
					t.Fatalf("round %d: counters = %+v, want %+v", round, s, tt.wantStats)
				}
				if next != nil && tt.granted {
					// The slot w gave up must have reached next.
					select {
					case <-next.ready:
					default:
						t.Fatalf("round %d: next waiter was not granted the slot w gave up", round)
					}
				}
				if release != nil {
					release.Release()
					if s := l.Stats(); s.Holding != 0 || s.Prefilling != 0 {
						t.Fatalf("round %d: holding = %d after release, want 0", round, s.Holding)
					}
				}
			}
		})
	}
}
