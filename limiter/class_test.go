package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// classes returns policy classes named c0, c1, ... with the given quanta.
func classes(quanta ...int) []limiter.Class {
	cs := make([]limiter.Class, len(quanta))
	for i, q := range quanta {
		cs[i] = limiter.Class{Name: fmt.Sprintf("c%d", i), Quantum: q}
	}
	return cs
}

// named is a queued client with a name for grant orders.
type named struct {
	name   string
	c      *client
	cancel context.CancelFunc
}

// queueNamed queues one client per spec, in order. A spec is
// "name:class:cost", with an optional ":deadline" (a duration from now).
func queueNamed(t *testing.T, l *limiter.Limiter, specs ...string) []*named {
	t.Helper()
	var ns []*named
	for _, s := range specs {
		var name string
		var class, cost int
		var deadline time.Duration
		f := strings.Split(s, ":")
		name = f[0]
		if _, err := fmt.Sscan(f[1], &class); err != nil {
			t.Fatalf("spec %q: %v", s, err)
		}
		if _, err := fmt.Sscan(f[2], &cost); err != nil {
			t.Fatalf("spec %q: %v", s, err)
		}
		req := limiter.Request{Class: class, Cost: cost}
		if len(f) > 3 {
			var err error
			if deadline, err = time.ParseDuration(f[3]); err != nil {
				t.Fatalf("spec %q: %v", s, err)
			}
			req.Deadline = time.Now().Add(deadline)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ns = append(ns, &named{name: name, c: startQueued(t, l, ctx, req), cancel: cancel})
	}
	return ns
}

// serveAll releases holder, then each granted client in turn, one slot at a
// time, and returns the names in grant order. Exactly one client must be
// granted per release; clients that already returned an error are skipped.
func serveAll(t *testing.T, holder func(), ns []*named) []string {
	t.Helper()
	pending := map[*named]bool{}
	for _, n := range ns {
		if _, done := n.c.returned(); !done {
			pending[n] = true
		}
	}
	var order []string
	for len(pending) > 0 {
		holder()
		synctest.Wait()
		var got *named
		for n := range pending {
			if o, ok := n.c.returned(); ok {
				if o.err != nil || got != nil {
					t.Fatalf("after a release: %s returned %v (also granted: %v)", n.name, o.err, got != nil)
				}
				got = n
			}
		}
		if got == nil {
			t.Fatalf("a release granted nobody; served so far %v", order)
		}
		delete(pending, got)
		order = append(order, got.name)
		holder = got.c.letGo
	}
	holder()
	synctest.Wait()
	return order
}

func TestNewClasses(t *testing.T) {
	tests := []struct {
		name    string
		classes []limiter.Class
		wantErr []string
	}{
		{name: "none", classes: nil},
		{name: "one", classes: []limiter.Class{{Name: "a", Quantum: 1}}},
		{name: "several with limits", classes: []limiter.Class{{Name: "a", Quantum: 3, Limit: 2}, {Name: "b", Quantum: 1}}},
		{name: "largest quantum", classes: []limiter.Class{{Name: "a", Quantum: 1 << 40}}},
		{name: "empty name", classes: []limiter.Class{{Quantum: 1}}, wantErr: []string{"class 0: name must not be empty"}},
		{name: "duplicate name", classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "a", Quantum: 2}}, wantErr: []string{`class 1: duplicate name "a"`}},
		{name: "zero quantum", classes: []limiter.Class{{Name: "a"}}, wantErr: []string{`class 0 ("a"): quantum must be between 1 and 1099511627776, got 0`}},
		{name: "quantum too large", classes: []limiter.Class{{Name: "a", Quantum: 1<<40 + 1}}, wantErr: []string{"got 1099511627777"}},
		{name: "negative limit", classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: -1}}, wantErr: []string{`class 0 ("a"): limit must not be negative, got -1`}},
		{
			name:    "everything wrong",
			classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "", Quantum: -1, Limit: -2}, {Name: "a", Quantum: 1}},
			wantErr: []string{"class 1: name must not be empty", "got -1", "got -2", `class 2: duplicate name "a"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 1, Classes: tt.classes})
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				want := limiter.Stats{Slots: 1, QueueLen: 1}
				for _, c := range tt.classes {
					want.Classes = append(want.Classes, limiter.ClassStats{Name: c.Name})
				}
				checkStats(t, l, want)
				return
			}
			if err == nil || l != nil {
				t.Fatalf("New = %v, %v; want an error", l, err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestBadClass checks that a class index out of range is refused with
// ErrBadClass, before anything else and without counting, and that an
// unlimited limiter ignores the class.
func TestBadClass(t *testing.T) {
	tests := []struct {
		name    string
		classes []limiter.Class
		class   int
		ended   bool // the context has ended too
	}{
		{name: "no classes, class 1", class: 1},
		{name: "no classes, class -1", class: -1},
		{name: "two classes, class 2", classes: classes(1, 1), class: 2},
		{name: "two classes, class -1", classes: classes(1, 1), class: -1},
		{name: "min int", classes: classes(1), class: math.MinInt},
		{name: "max int", classes: classes(1), class: math.MaxInt},
		{name: "ended context too", classes: classes(1, 1), class: 5, ended: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, held := range []int{0, 1, 2} { // free slot, would queue, would be refused
				synctest.Test(t, func(t *testing.T) {
					l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1, Classes: tt.classes})
					var releases []func()
					if held > 0 {
						releases = append(releases, acquireDirect(t, l))
					}
					if held > 1 {
						w := startQueued(t, l, context.Background(), limiter.Request{})
						releases = append(releases, func() { synctest.Wait(); w.letGo() })
					}
					before := l.Stats()
					ctx, cancel := context.WithCancel(context.Background())
					if tt.ended {
						cancel()
					}
					onQueued := 0
					release, err := l.AcquireRequest(ctx, limiter.Request{Class: tt.class, OnQueued: func() { onQueued++ }})
					cancel()
					if !errors.Is(err, limiter.ErrBadClass) || release != nil || onQueued != 0 {
						t.Fatalf("held %d: AcquireRequest = %v, %v (OnQueued %d); want ErrBadClass at once", held, release != nil, err, onQueued)
					}
					if want := fmt.Sprintf("class %d of %d", tt.class, max(1, len(tt.classes))); !strings.Contains(err.Error(), want) {
						t.Fatalf("error %q does not name %q", err, want)
					}
					checkStats(t, l, before)
					for _, r := range releases {
						r()
					}
					synctest.Wait()
				})
			}
		})
	}
	t.Run("unlimited ignores the class", func(t *testing.T) {
		l := limiter.NewUnlimited()
		for _, c := range []int{0, 3, -1} {
			release, err := l.AcquireRequest(context.Background(), limiter.Request{Class: c, Cost: 9})
			if err != nil {
				t.Fatalf("class %d: %v", c, err)
			}
			release.Release()
		}
		checkStats(t, l, limiter.Stats{Unlimited: true, AdmittedDirect: 3})
	})
}

// TestClassOrder checks the exact DRR grant order for always-backlogged
// classes (every grant is replaced at once by a new waiter of its class).
func TestClassOrder(t *testing.T) {
	tests := []struct {
		name    string
		quanta  []int
		costs   []int
		pattern []int // classes granted, repeating
	}{
		{name: "quanta 3:1", quanta: []int{3, 1}, costs: []int{1, 1}, pattern: []int{0, 0, 0, 1}},
		{name: "quanta 1:3", quanta: []int{1, 3}, costs: []int{1, 1}, pattern: []int{0, 1, 1, 1}},
		{name: "three equal", quanta: []int{1, 1, 1}, costs: []int{1, 1, 1}, pattern: []int{0, 1, 2}},
		// c0 earns 1 a round and needs 3; c1 earns 2 and needs 1: c0 is
		// granted on its third visit.
		{name: "cost above quantum", quanta: []int{1, 2}, costs: []int{3, 1}, pattern: []int{1, 1, 1, 1, 0, 1, 1}},
		// Zero and negative costs count as 1.
		{name: "costs at most 0", quanta: []int{2, 1}, costs: []int{0, -5}, pattern: []int{0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 64, Classes: classes(tt.quanta...)})
				n := 5 * len(tt.pattern)
				got := runBacklogged(t, l, tt.costs, 2, n)
				for i, c := range got {
					if want := tt.pattern[i%len(tt.pattern)]; c != want {
						t.Fatalf("grant %d went to class %d, want %d; grants %v", i, c, want, got)
					}
				}
			})
		})
	}
}

// TestClassShares measures each class's share of the grants over many
// grants while every class stays backlogged: it follows quantum/cost.
func TestClassShares(t *testing.T) {
	const grants = 4000
	tests := []struct {
		name   string
		quanta []int
		costs  []int
	}{
		{name: "3:1 equal cost", quanta: []int{3, 1}, costs: []int{1, 1}},
		{name: "1:1", quanta: []int{1, 1}, costs: []int{1, 1}},
		{name: "3:1 costs 3:1", quanta: []int{3, 1}, costs: []int{3, 1}},
		{name: "2:1 costs 1:2", quanta: []int{2, 1}, costs: []int{1, 2}},
		{name: "5:3 costs 2:7", quanta: []int{5, 3}, costs: []int{2, 7}},
		{name: "1:2:3", quanta: []int{1, 2, 3}, costs: []int{1, 1, 1}},
		{name: "4:4 costs 1:10", quanta: []int{4, 4}, costs: []int{1, 10}},
		{name: "quantum below cost", quanta: []int{1, 1}, costs: []int{5, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 64, Classes: classes(tt.quanta...)})
				got := runBacklogged(t, l, tt.costs, 3, grants)
				counts := make([]int, len(tt.quanta))
				for _, c := range got {
					counts[c]++
				}
				var rateSum float64
				for i := range tt.quanta {
					rateSum += float64(tt.quanta[i]) / float64(tt.costs[i])
				}
				for i, n := range counts {
					want := grants * float64(tt.quanta[i]) / float64(tt.costs[i]) / rateSum
					if math.Abs(float64(n)-want) > 0.02*want+1 {
						t.Errorf("class %d granted %d of %d, want %.1f (counts %v)", i, n, grants, want, counts)
					}
				}
				s := l.Stats()
				for i, n := range counts {
					if s.Classes[i].AdmittedQueued != uint64(n) {
						t.Errorf("Stats.Classes[%d].AdmittedQueued = %d, want %d", i, s.Classes[i].AdmittedQueued, n)
					}
				}
			})
		})
	}
}

// runBacklogged keeps backlog waiters of each class queued behind the one
// slot, replacing each granted waiter by a new one of its class, and returns
// the class of each of n grants. It leaves the limiter empty.
func runBacklogged(t *testing.T, l *limiter.Limiter, costs []int, backlog, n int) []int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type entry struct {
		c     *client
		class int
	}
	var pending []entry
	enqueue := func(class int) {
		pending = append(pending, entry{startQueued(t, l, ctx, limiter.Request{Class: class, Cost: costs[class]}), class})
	}
	holder := acquireDirect(t, l)
	for range backlog {
		for c := range costs {
			enqueue(c)
		}
	}
	order := make([]int, 0, n)
	for range n {
		holder()
		synctest.Wait()
		idx := -1
		for i, e := range pending {
			if o, ok := e.c.returned(); ok {
				if o.err != nil || idx >= 0 {
					t.Fatalf("grant %d: unexpected return %v", len(order), o.err)
				}
				idx = i
			}
		}
		if idx < 0 {
			t.Fatalf("grant %d: nobody was granted the slot", len(order))
		}
		e := pending[idx]
		pending = append(pending[:idx], pending[idx+1:]...)
		order = append(order, e.class)
		holder = e.c.letGo
		enqueue(e.class)
	}
	cancel()
	synctest.Wait()
	holder()
	synctest.Wait()
	if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
		t.Fatalf("after the run: Holding %d Waiting %d", s.Holding, s.Waiting)
	}
	return order
}
