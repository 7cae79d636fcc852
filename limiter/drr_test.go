package limiter

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// refDRR is textbook deficit round robin, stepped one visit at a time: the
// reference drr's one-pass nextVisit must agree with, grant for grant and
// deficit for deficit.
type refDRR struct {
	quantum []int64
	queues  [][]*waiter // per class, oldest first
	deficit []int64
	active  []int // classes with waiters; active[0] is being visited
	charged bool  // active[0] has received its quantum for this visit
}

func (r *refDRR) push(c int, w *waiter) {
	if len(r.queues[c]) == 0 {
		r.active = append(r.active, c)
	}
	r.queues[c] = append(r.queues[c], w)
}

func (r *refDRR) remove(c int, w *waiter) {
	i := slices.Index(r.queues[c], w)
	r.queues[c] = slices.Delete(r.queues[c], i, i+1)
	if len(r.queues[c]) == 0 {
		r.empty(c)
	}
}

func (r *refDRR) empty(c int) {
	r.deficit[c] = 0
	i := slices.Index(r.active, c)
	r.active = slices.Delete(r.active, i, i+1)
	if i == 0 {
		r.charged = false
	}
}

func (r *refDRR) pop() *waiter {
	for len(r.active) > 0 {
		c := r.active[0]
		if !r.charged {
			r.deficit[c] += r.quantum[c]
			r.charged = true
		}
		if w := r.queues[c][0]; w.cost <= r.deficit[c] {
			r.deficit[c] -= w.cost
			r.queues[c] = r.queues[c][1:]
			if len(r.queues[c]) == 0 {
				r.empty(c)
			}
			return w
		}
		r.active = append(r.active[1:], c) // the visit ends
		r.charged = false
	}
	return nil
}

// TestDRRMatchesReference drives drr and the stepped reference with the
// same random pushes, pops and removals (cancellations) and compares every
// popped waiter and every deficit.
func TestDRRMatchesReference(t *testing.T) {
	tests := []struct {
		name     string
		quanta   []int
		maxCost  int
		pushBias int // out of 10: chance that an operation is a push
	}{
		{name: "one class", quanta: []int{3}, maxCost: 7, pushBias: 5},
		{name: "two classes equal cost", quanta: []int{3, 1}, maxCost: 1, pushBias: 5},
		{name: "two classes costs above quanta", quanta: []int{2, 5}, maxCost: 40, pushBias: 5},
		{name: "four classes", quanta: []int{1, 2, 3, 10}, maxCost: 12, pushBias: 6},
		{name: "eight classes mostly backlogged", quanta: []int{1, 1, 2, 3, 5, 8, 13, 21}, maxCost: 30, pushBias: 7},
		{name: "large costs", quanta: []int{1, 300}, maxCost: 3000, pushBias: 5},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano()) + uint64(i)
			rng := rand.New(rand.NewPCG(seed, 0))
			opts := make([]Class, len(tt.quanta))
			ref := &refDRR{queues: make([][]*waiter, len(tt.quanta)), deficit: make([]int64, len(tt.quanta))}
			for i, q := range tt.quanta {
				opts[i] = Class{Name: string(rune('a' + i)), Quantum: q}
				ref.quantum = append(ref.quantum, int64(q))
			}
			l, err := New(Options{Slots: 1, QueueLen: 1 << 20, Classes: opts})
			if err != nil {
				t.Fatal(err)
			}
			l.holding = 1
			d := l.queue.(*drr)
			var queued []*waiter
			classOf := map[*waiter]int{}
			pops := 0
			for op := range 20000 {
				switch k := rng.IntN(10); {
				case k < tt.pushBias:
					c := rng.IntN(len(tt.quanta))
					w := l.enqueue(c, int64(1+rng.IntN(tt.maxCost)))
					classOf[w] = c
					ref.push(c, w)
					queued = append(queued, w)
				case k < 9 || len(queued) == 0:
					got, want := d.pop(), ref.pop()
					if got != want {
						t.Fatalf("seed %d op %d: drr popped %p (class %d), reference %p (class %d)", seed, op, got, classOf[got], want, classOf[want])
					}
					if got != nil {
						pops++
						l.grantLocked(got)
						queued = slices.DeleteFunc(queued, func(w *waiter) bool { return w == got })
					}
				default: // a waiter leaves: cancelled or timed out
					i := rng.IntN(len(queued))
					w := queued[i]
					queued = slices.Delete(queued, i, i+1)
					d.remove(w)
					l.waiting--
					w.cls.waiting--
					ref.remove(classOf[w], w)
				}
				for c := range l.classes {
					if got, want := l.classes[c].deficit, ref.deficit[c]; got != want {
						t.Fatalf("seed %d op %d: class %d deficit %d, reference %d", seed, op, c, got, want)
					}
				}
				var wantHead *class
				if len(ref.active) > 0 {
					wantHead = &l.classes[ref.active[0]]
				}
				if d.head != wantHead || d.charged != ref.charged {
					t.Fatalf("seed %d op %d: head or visit state differs from the reference", seed, op)
				}
				if op%64 == 0 {
					if err := l.CheckInvariants(); err != nil {
						t.Fatalf("seed %d op %d: %v", seed, op, err)
					}
				}
			}
			if pops < 1000 {
				t.Fatalf("only %d pops: the test did not exercise the scheduler", pops)
			}
		})
	}
}
