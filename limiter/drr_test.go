package limiter

import (
	"context"
	"errors"
	"fmt"
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

// queued describes one waiter of a scripted run: its name, class and cost.
type queued struct {
	name  string
	class int
	cost  int64
}

// grantOrder queues ws behind one holder of the only slot, then releases
// the slot again and again, each grantee releasing it in turn, and
// returns the names in grant order with the classes' deficits after each
// grant. The waiter named reversed, when it is granted, is cancelled in
// the same instant by reverse, which hands the slot on; it is not listed.
func grantOrder(t *testing.T, quanta []int, ws []queued, reversed string, reverse func(*Limiter, *waiter)) ([]string, [][]int64) {
	t.Helper()
	opts := make([]Class, len(quanta))
	for i, q := range quanta {
		opts[i] = Class{Name: string(rune('A' + i)), Quantum: q}
	}
	l, err := New(Options{Slots: 1, QueueLen: len(ws), Classes: opts})
	if err != nil {
		t.Fatal(err)
	}
	l.holding, l.prefilling = 1, 1
	name := map[*waiter]string{}
	var all []*waiter
	for _, q := range ws {
		w := l.enqueue(q.class, q.cost)
		name[w] = q.name
		all = append(all, w)
	}
	seen := map[*waiter]bool{}
	next := func() *waiter {
		for _, w := range all {
			if w.granted && !seen[w] {
				seen[w] = true
				return w
			}
		}
		return nil
	}
	var order []string
	var deficits [][]int64
	l.releaseSlot(true, 0)
	for w := next(); w != nil; w = next() {
		if name[w] == reversed {
			reverse(l, w)
		} else {
			order = append(order, name[w])
			var d []int64
			for i := range l.classes {
				d = append(d, l.classes[i].deficit)
			}
			deficits = append(deficits, d)
			l.releaseSlot(true, 0)
		}
		if err := l.CheckInvariants(); err != nil {
			t.Fatalf("after granting %s: %v", name[w], err)
		}
	}
	want := len(ws)
	if reversed != "" {
		want--
	}
	if len(order) != want {
		t.Fatalf("granted %v of %d waiters, want %d", order, len(ws), want)
	}
	return order, deficits
}

// TestDRRRefundsReversedGrant checks that a round robin grant reversed
// because the waiter's context ended in the same instant costs its class
// nothing: the grants that follow, and the deficits after each, are those
// of the same queue without the reversed waiter. Without the refund the
// class would lose its turn (first two cases) or part of its visit.
func TestDRRRefundsReversedGrant(t *testing.T) {
	reversals := []struct {
		name    string
		rounds  int
		reverse func(*Limiter, *waiter)
	}{
		{
			// wait sees both the grant and the cancelled context, and
			// picks either case of its select: both reverse the grant.
			name: "wait", rounds: 50,
			reverse: func(l *Limiter, w *waiter) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if p, err := l.wait(ctx, w, time.Time{}, ErrQueueTimeout); p != nil || !errors.Is(err, context.Canceled) {
					panic(fmt.Sprintf("wait = %v, %v; want nil, context.Canceled", p, err))
				}
			},
		},
		{
			name: "giveUp", rounds: 1,
			reverse: func(l *Limiter, w *waiter) {
				if p, err := l.giveUp(w, context.Canceled); p != nil || !errors.Is(err, context.Canceled) {
					panic(fmt.Sprintf("giveUp = %v, %v; want nil, context.Canceled", p, err))
				}
			},
		},
	}
	tests := []struct {
		name     string
		quanta   []int
		ws       []queued
		reversed string
		want     []string
	}{
		{
			name:   "class keeps its turn",
			quanta: []int{1, 1},
			ws: []queued{
				{"a1", 0, 2}, {"a2", 0, 2}, {"b1", 1, 2}, {"b2", 1, 2},
			},
			reversed: "a1",
			want:     []string{"a2", "b1", "b2"}, // b1 first if a1's cost were kept
		},
		{
			name:   "class keeps its turn among three",
			quanta: []int{1, 1, 1},
			ws: []queued{
				{"a1", 0, 3}, {"a2", 0, 3}, {"b1", 1, 3}, {"c1", 2, 3}, {"b2", 1, 3},
			},
			reversed: "a1",
			want:     []string{"a2", "b1", "c1", "b2"},
		},
		{
			name:   "visit goes on",
			quanta: []int{2, 2},
			ws: []queued{
				{"a1", 0, 1}, {"a2", 0, 1}, {"a3", 0, 1}, {"a4", 0, 1},
				{"b1", 1, 1}, {"b2", 1, 1}, {"b3", 1, 1},
			},
			reversed: "a2",
			want:     []string{"a1", "a3", "b1", "b2", "a4", "b3"}, // a3 after b2 without the refund
		},
		{
			name:   "reversed later in the visit",
			quanta: []int{5, 1},
			ws: []queued{
				{"a1", 0, 2}, {"a2", 0, 2}, {"a3", 0, 1}, {"a4", 0, 2},
				{"b1", 1, 1}, {"b2", 1, 1},
			},
			reversed: "a2",
			want:     []string{"a1", "a3", "a4", "b1", "b2"},
		},
		{
			// a1 was its class's last waiter: the class emptied, its
			// deficit was reset, and there is nothing to give back.
			name:   "last waiter of its class",
			quanta: []int{1, 1},
			ws: []queued{
				{"a1", 0, 2}, {"b1", 1, 2}, {"b2", 1, 2},
			},
			reversed: "a1",
			want:     []string{"b1", "b2"},
		},
	}
	for _, rv := range reversals {
		for _, tt := range tests {
			t.Run(rv.name+"/"+tt.name, func(t *testing.T) {
				var without []queued
				for _, q := range tt.ws {
					if q.name != tt.reversed {
						without = append(without, q)
					}
				}
				wantOrder, wantDeficits := grantOrder(t, tt.quanta, without, "", nil)
				if !slices.Equal(wantOrder, tt.want) {
					t.Fatalf("without %s: grant order %v, want %v", tt.reversed, wantOrder, tt.want)
				}
				for round := range rv.rounds {
					order, deficits := grantOrder(t, tt.quanta, tt.ws, tt.reversed, rv.reverse)
					if !slices.Equal(order, wantOrder) {
						t.Fatalf("round %d: grant order %v, want %v as without %s", round, order, wantOrder, tt.reversed)
					}
					for i := range deficits {
						if !slices.Equal(deficits[i], wantDeficits[i]) {
							t.Fatalf("round %d: deficits after granting %s = %v, want %v as without %s",
								round, order[i], deficits[i], wantDeficits[i], tt.reversed)
						}
					}
				}
			})
		}
	}
}

// TestDRRRefundEdges scripts drr directly around a refund: what is given
// back, and when nothing is.
func TestDRRRefundEdges(t *testing.T) {
	type step struct {
		op string // "push" w; "pop" or "popNewest", which must return w; "refund" w
		w  queued
	}
	pop := func(name string) step { return step{op: "pop", w: queued{name: name}} }
	refund := func(name string) step { return step{op: "refund", w: queued{name: name}} }
	tests := []struct {
		name   string
		quanta []int
		steps  []step
		want   []int64 // deficits after the steps
	}{
		{
			name:   "in full during the visit, once",
			quanta: []int{1, 1},
			steps: []step{
				{"push", queued{"a1", 0, 2}}, {"push", queued{"a2", 0, 2}}, {"push", queued{"b1", 1, 2}},
				pop("a1"), refund("a1"), refund("a1"),
			},
			want: []int64{2, 1},
		},
		{
			name:   "nothing for a LIFO grant",
			quanta: []int{1, 1},
			steps: []step{
				{"push", queued{"a1", 0, 2}}, {"push", queued{"a2", 0, 2}},
				{"push", queued{"b1", 1, 2}}, {"push", queued{"b2", 1, 2}},
				pop("a1"), {"popNewest", queued{name: "b2"}}, refund("b2"),
			},
			want: []int64{0, 1},
		},
		{
			name:   "nothing once the class emptied",
			quanta: []int{1, 1},
			steps: []step{
				{"push", queued{"a1", 0, 2}}, {"push", queued{"b1", 1, 2}},
				pop("a1"), refund("a1"),
			},
			want: []int64{0, 1},
		},
		{
			// a1 emptied class A, a2 started a new busy period: it owes
			// nothing to the old one.
			name:   "nothing once the class emptied and rejoined",
			quanta: []int{1, 1},
			steps: []step{
				{"push", queued{"a1", 0, 2}}, {"push", queued{"b1", 1, 2}},
				pop("a1"), {"push", queued{"a2", 0, 2}}, refund("a1"),
			},
			want: []int64{0, 1},
		},
		{
			// A's visit ended at a2 before a1's grant was reversed, so A
			// holds its credit between visits, where it stays below
			// maxCost: the next visit adds a quantum of 2^40 to it.
			name:   "capped after the visit ended",
			quanta: []int{maxQuantum, 1},
			steps: []step{
				{"push", queued{"a1", 0, maxCost}}, {"push", queued{"a2", 0, maxCost}}, {"push", queued{"b1", 1, 1}},
				pop("a1"), pop("b1"), refund("a1"),
			},
			want: []int64{maxCost - 1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := make([]Class, len(tt.quanta))
			for i, q := range tt.quanta {
				opts[i] = Class{Name: string(rune('A' + i)), Quantum: q}
			}
			l, err := New(Options{Slots: 1, QueueLen: 16, Classes: opts})
			if err != nil {
				t.Fatal(err)
			}
			l.holding, l.prefilling = 1, 1 // no room: nothing is dispatched
			d := l.queue.(*drr)
			byName := map[string]*waiter{}
			for i, s := range tt.steps {
				var got *waiter
				switch s.op {
				case "push":
					w := l.enqueue(s.w.class, s.w.cost)
					l.seq++
					w.seq = l.seq // arrival order, for popNewest
					byName[s.w.name] = w
				case "pop":
					got = d.pop()
				case "popNewest":
					got = d.popNewest()
				case "refund":
					d.refund(byName[s.w.name])
				default:
					t.Fatalf("step %d: unknown op %q", i, s.op)
				}
				if s.op == "pop" || s.op == "popNewest" {
					if want := byName[s.w.name]; got != want {
						t.Fatalf("step %d: %s returned %p, want %s (%p)", i, s.op, got, s.w.name, want)
					}
					l.grantLocked(got)
				}
				if err := l.CheckInvariants(); err != nil {
					t.Fatalf("step %d (%s %s): %v", i, s.op, s.w.name, err)
				}
			}
			var got []int64
			for i := range l.classes {
				got = append(got, l.classes[i].deficit)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("deficits = %v, want %v", got, tt.want)
			}
		})
	}
}
