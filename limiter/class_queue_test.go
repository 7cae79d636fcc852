package limiter_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// TestClassFIFO checks that within each class waiters are served in arrival
// order whatever the classes and costs around them, and the whole order
// DRR gives.
func TestClassFIFO(t *testing.T) {
	tests := []struct {
		name   string
		quanta []int
		queue  []string // name:class:cost
		want   []string
	}{
		{
			name: "one class", quanta: []int{1},
			queue: []string{"a1:0:5", "a2:0:1", "a3:0:3"}, want: []string{"a1", "a2", "a3"},
		},
		{
			// Visits: a (+2) a1 a2 | b (+1) b1 | a (+2) a3 | b b2 | a a4,
			// and a, now empty, leaves the ring | b b3.
			name: "two classes interleaved", quanta: []int{2, 1},
			queue: []string{"a1:0:1", "b1:1:1", "a2:0:1", "b2:1:1", "a3:0:2", "b3:1:1", "a4:0:1"},
			want:  []string{"a1", "a2", "b1", "a3", "b2", "a4", "b3"},
		},
		{
			// A costly head blocks its class, not the others: a1 needs
			// three visits of a, while b is served once a visit.
			name: "costly head waits its turn", quanta: []int{1, 1},
			queue: []string{"a1:0:3", "a2:0:1", "b1:1:1", "b2:1:1", "b3:1:1"},
			want:  []string{"b1", "b2", "a1", "b3", "a2"},
		},
		{
			// Classes are visited in the order they became non-empty.
			name: "three classes", quanta: []int{1, 1, 1},
			queue: []string{"b1:1:1", "a1:0:1", "b2:1:1", "a2:0:1", "c1:2:1"},
			want:  []string{"b1", "a1", "c1", "b2", "a2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: len(tt.queue), Classes: classes(tt.quanta...)})
				holder := acquireDirect(t, l)
				ns := queueNamed(t, l, tt.queue...)
				if got := serveAll(t, holder, ns); !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("grant order %v, want %v", got, tt.want)
				}
			})
		})
	}
}

// TestClassLimits checks the per-class Limit and the total bound QueueLen
// with classes: arrivals beyond either are refused at once with
// ErrQueueFull and counted, in total and for their class.
func TestClassLimits(t *testing.T) {
	tests := []struct {
		name     string
		queueLen int
		limits   []int
		arrivals []int  // classes, in order, each behind the one held slot
		want     string // per arrival: q queued, f refused
	}{
		{name: "class limit", queueLen: 4, limits: []int{1, 0}, arrivals: []int{0, 0, 1, 1, 0}, want: "qfqqf"},
		{name: "total bound", queueLen: 3, limits: []int{0, 0}, arrivals: []int{0, 1, 0, 1, 0}, want: "qqqff"},
		{name: "limit above total", queueLen: 2, limits: []int{5, 5}, arrivals: []int{0, 0, 0, 1}, want: "qqff"},
		{name: "both limited", queueLen: 4, limits: []int{2, 1}, arrivals: []int{1, 1, 0, 0, 0, 1}, want: "qfqqff"},
		{name: "no queue", queueLen: 0, limits: []int{1, 0}, arrivals: []int{0, 1}, want: "ff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := classes(make([]int, len(tt.limits))...)
				for i := range cs {
					cs[i].Quantum, cs[i].Limit = 1, tt.limits[i]
				}
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: tt.queueLen, Classes: cs})
				holder := acquireDirect(t, l)
				want := limiter.Stats{Slots: 1, QueueLen: tt.queueLen, Holding: 1, AdmittedDirect: 1}
				for _, c := range cs {
					want.Classes = append(want.Classes, limiter.ClassStats{Name: c.Name})
				}
				var ns []*named
				for i, c := range tt.arrivals {
					if tt.want[i] == 'q' {
						ns = append(ns, &named{name: string(rune('0' + i)), c: startQueued(t, l, context.Background(), limiter.Request{Class: c})})
						want.Waiting++
						want.Classes[c].Waiting++
					} else {
						onQueued := 0
						_, err := l.AcquireRequest(context.Background(), limiter.Request{Class: c, OnQueued: func() { onQueued++ }})
						if !errors.Is(err, limiter.ErrQueueFull) || onQueued != 0 {
							t.Fatalf("arrival %d (class %d): err %v, OnQueued %d; want ErrQueueFull at once", i, c, err, onQueued)
						}
						want.RejectedFull++
						want.Classes[c].RejectedFull++
					}
					checkStats(t, l, want)
				}
				// Once served, every class may queue again.
				serveAll(t, holder, ns)
				want.Holding, want.Waiting, want.AdmittedQueued = 0, 0, uint64(len(ns))
				for i := range want.Classes {
					want.Classes[i].AdmittedQueued += uint64(want.Classes[i].Waiting)
					want.Classes[i].Waiting = 0
				}
				checkStats(t, l, want)
				if tt.queueLen > 0 {
					holder = acquireDirect(t, l)
					for c := range cs {
						if c < tt.queueLen {
							ns = queueNamed(t, l, string(rune('a'+c))+":"+string(rune('0'+c))+":1")
							serveAll(t, holder, ns)
							holder = acquireDirect(t, l)
						}
					}
					holder()
				}
			})
		})
	}
}

// TestClassDeadline checks, on a fake clock, that a waiter of a class leaves
// with ErrQueueTimeout exactly at its deadline, is counted for its class,
// and that the classes are served as if it had never queued.
func TestClassDeadline(t *testing.T) {
	tests := []struct {
		name         string
		queueTimeout time.Duration
		queue        []string // name:class:cost[:deadline]
		expire       string   // the waiter whose deadline comes first
		at           time.Duration
		wantOrder    []string // grants after it left
	}{
		{
			name: "head of its class", queue: []string{"a1:0:1:1s", "b1:1:1", "a2:0:1"},
			expire: "a1", at: time.Second, wantOrder: []string{"a2", "b1"},
		},
		{
			name: "only waiter of its class", queue: []string{"a1:0:1", "b1:1:1:300ms", "a2:0:1"},
			expire: "b1", at: 300 * time.Millisecond, wantOrder: []string{"a1", "a2"},
		},
		{
			name: "queue timeout", queueTimeout: 2 * time.Second, queue: []string{"a1:0:1:5s", "b1:1:1:3s"},
			expire: "a1", at: 2 * time.Second, wantOrder: nil, // b1 times out with a1
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 4, QueueTimeout: tt.queueTimeout, Classes: classes(1, 1)})
				holder := acquireDirect(t, l)
				start := time.Now()
				ns := queueNamed(t, l, tt.queue...)
				time.Sleep(tt.at - time.Nanosecond)
				synctest.Wait()
				for _, n := range ns {
					if o, ok := n.c.returned(); ok {
						t.Fatalf("%s returned %v after %v, before the first deadline %v", n.name, o.err, time.Since(start), tt.at)
					}
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				var left []*named
				timedOut := map[int]uint64{}
				for i, n := range ns {
					o, ok := n.c.returned()
					if !ok {
						left = append(left, n)
						continue
					}
					if n.name != tt.expire && tt.wantOrder != nil {
						t.Fatalf("%s returned %v, want only %s to leave", n.name, o.err, tt.expire)
					}
					if !errors.Is(o.err, limiter.ErrQueueTimeout) || o.at.Sub(start) != tt.at {
						t.Fatalf("%s: %v after %v, want ErrQueueTimeout after exactly %v", n.name, o.err, o.at.Sub(start), tt.at)
					}
					timedOut[classOfSpec(tt.queue[i])]++
				}
				if s := l.Stats(); s.Classes[0].TimedOut != timedOut[0] || s.Classes[1].TimedOut != timedOut[1] ||
					s.TimedOut != timedOut[0]+timedOut[1] || s.Waiting != len(left) {
					t.Fatalf("Stats %+v, want timed out %v and %d waiting", s, timedOut, len(left))
				}
				got := serveAll(t, holder, left)
				if len(got) != 0 || len(tt.wantOrder) != 0 {
					if !reflect.DeepEqual(got, tt.wantOrder) {
						t.Fatalf("grant order after the deadline %v, want %v", got, tt.wantOrder)
					}
				}
			})
		})
	}
}

func classOfSpec(s string) int { return int(s[len("a1:")] - '0') }

// TestClassCancel checks that a waiter of a class whose context ends leaves
// at once, counted for its class, and that the DRR state stays consistent:
// a class emptied by cancellation loses its deficit and its place in the
// ring.
func TestClassCancel(t *testing.T) {
	tests := []struct {
		name     string
		quanta   []int
		queue    []string // name:class:cost
		first    int      // grants before the cancellation
		cancel   string
		then     []string // queued after the cancellation
		wantRest []string // grants after the cancellation
	}{
		{
			name: "head of a class", quanta: []int{1, 1},
			queue:  []string{"a1:0:1", "a2:0:1", "b1:1:1"},
			cancel: "a1", wantRest: []string{"a2", "b1"},
		},
		{
			name: "middle of a class", quanta: []int{1, 1},
			queue:  []string{"a1:0:1", "a2:0:1", "a3:0:1", "b1:1:1", "b2:1:1"},
			cancel: "a2", wantRest: []string{"a1", "b1", "a3", "b2"},
		},
		{
			// a1 leaves a with deficit 2; a2's cancellation empties a, so
			// the deficit is dropped: a3 (cost 5) needs two fresh visits
			// of 3 and comes after b2, not before.
			name: "empties the class being visited", quanta: []int{3, 1},
			queue: []string{"a1:0:1", "a2:0:1", "b1:1:1", "b2:1:1", "b3:1:1"},
			first: 1, cancel: "a2", then: []string{"a3:0:5"},
			wantRest: []string{"b1", "b2", "a3", "b3"},
		},
		{
			name: "only waiter of the other class", quanta: []int{1, 1},
			queue:  []string{"a1:0:1", "b1:1:1", "a2:0:1"},
			cancel: "b1", wantRest: []string{"a1", "a2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 8, Classes: classes(tt.quanta...)})
				holder := acquireDirect(t, l)
				ns := queueNamed(t, l, tt.queue...)
				for range tt.first {
					holder()
					synctest.Wait()
					g := -1
					for i, n := range ns {
						if o, ok := n.c.returned(); ok && o.err == nil {
							g = i
						}
					}
					if g < 0 {
						t.Fatal("no grant")
					}
					holder = ns[g].c.letGo
					ns = append(ns[:g], ns[g+1:]...)
				}
				var victim *named
				for i, n := range ns {
					if n.name == tt.cancel {
						victim = n
						ns = append(ns[:i], ns[i+1:]...)
						break
					}
				}
				before := l.Stats()
				start := time.Now()
				victim.cancel()
				synctest.Wait()
				if o, ok := victim.c.returned(); !ok || !errors.Is(o.err, context.Canceled) || !o.at.Equal(start) {
					t.Fatalf("cancelled waiter: returned %t %+v, want context.Canceled at once", ok, o)
				}
				vc := classOfSpec(tt.queue[indexOfName(tt.queue, tt.cancel)])
				want := before
				want.Classes = append([]limiter.ClassStats(nil), before.Classes...)
				want.Waiting--
				want.Classes[vc].Waiting--
				want.CancelledWaiting++
				want.Classes[vc].CancelledWaiting++
				checkStats(t, l, want)
				ns = append(ns, queueNamed(t, l, tt.then...)...)
				if got := serveAll(t, holder, ns); !reflect.DeepEqual(got, tt.wantRest) {
					t.Fatalf("grant order after the cancellation %v, want %v", got, tt.wantRest)
				}
			})
		})
	}
}

func indexOfName(specs []string, name string) int {
	for i, s := range specs {
		if len(s) > len(name) && s[:len(name)+1] == name+":" {
			return i
		}
	}
	return -1
}

// TestClassNoBarging checks that with classes a newcomer never takes a
// free slot while any class has waiters, whichever its own class.
func TestClassNoBarging(t *testing.T) {
	tests := []struct {
		name         string
		waiterClass  int
		comerClass   int
		releaseFirst bool
	}{
		{name: "same class, slot just released", waiterClass: 1, comerClass: 1, releaseFirst: true},
		{name: "other class, slot just released", waiterClass: 1, comerClass: 0, releaseFirst: true},
		{name: "other class, no slot free", waiterClass: 0, comerClass: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 2, QueueLen: 2, Classes: classes(100, 1)})
				holders := acquireN(t, l, 2)
				w := queueNamed(t, l, "w:"+string(rune('0'+tt.waiterClass))+":1")
				if tt.releaseFirst {
					holders[0]()
					holders = holders[1:]
				}
				ctx, cancel := context.WithCancel(context.Background())
				queued := false
				release, err := l.AcquireRequest(ctx, limiter.Request{Class: tt.comerClass, OnQueued: func() { queued = true; cancel() }})
				if err == nil {
					release.Release()
					t.Fatal("newcomer admitted directly while a waiter was queued: barging")
				}
				if !queued || !errors.Is(err, context.Canceled) {
					t.Fatalf("newcomer: queued %t err %v, want queued behind the waiter", queued, err)
				}
				synctest.Wait()
				if _, ok := w[0].c.returned(); ok != tt.releaseFirst {
					t.Fatalf("waiter granted = %t, want %t", ok, tt.releaseFirst)
				}
				if s := l.Stats(); s.Classes[tt.comerClass].CancelledWaiting != 1 || s.AdmittedDirect != 2 {
					t.Fatalf("Stats %+v", s)
				}
				holders[0]()
				if !tt.releaseFirst {
					synctest.Wait()
					holders[1]()
				}
				synctest.Wait()
				w[0].c.letGo()
				synctest.Wait()
			})
		})
	}
}
