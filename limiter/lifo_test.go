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

// TestAdaptiveLIFO checks, on a fake clock, that with AdaptiveLIFO the
// grant after a waiter leaves the queue by the queue delay goes to the newest
// waiter, exactly once however many timed out together, and then FIFO
// (or DRR) order resumes; that each new timeout does it once again; that
// a cancelled waiter does not; and that without AdaptiveLIFO the order
// stays FIFO. Stats.DequeuedLIFO counts those grants, in total and for
// the class of the waiter.
//
// In each episode the expiring waiters queue at the start, the others
// half a queue timeout later; when the first expire, the only slot is
// handed on until every other waiter is served.
func TestAdaptiveLIFO(t *testing.T) {
	const timeout = time.Second
	tests := []struct {
		name         string
		adaptiveLIFO bool
		queueTimeout time.Duration
		classes      []limiter.Class
		expire       []string // queued first; they time out (name:class:cost[:deadline])
		cancel       bool     // the first ones are cancelled instead
		others       []string // queued half a timeout later
		want         []string // grant order of others
		wantLIFO     []uint64 // DequeuedLIFO per class, each episode
		episodes     int
	}{
		{
			name: "without adaptive LIFO: FIFO", queueTimeout: timeout,
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:0:1", "d:0:1"},
			want: []string{"b", "c", "d"}, wantLIFO: []uint64{0},
		},
		{
			name: "one LIFO grant, then FIFO", adaptiveLIFO: true, queueTimeout: timeout,
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:0:1", "d:0:1"},
			want: []string{"d", "b", "c"}, wantLIFO: []uint64{1},
		},
		{
			name: "two timeouts in one instant, still one LIFO grant", adaptiveLIFO: true, queueTimeout: timeout,
			expire: []string{"a1:0:1", "a2:0:1"}, others: []string{"b:0:1", "c:0:1", "d:0:1", "e:0:1"},
			want: []string{"e", "b", "c", "d"}, wantLIFO: []uint64{1},
		},
		{
			name: "once per episode", adaptiveLIFO: true, queueTimeout: timeout, episodes: 3,
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:0:1", "d:0:1"},
			want: []string{"d", "b", "c"}, wantLIFO: []uint64{1},
		},
		{
			name: "a single waiter left", adaptiveLIFO: true, queueTimeout: timeout,
			expire: []string{"a:0:1"}, others: []string{"b:0:1"},
			want: []string{"b"}, wantLIFO: []uint64{1},
		},
		{
			// Dynamo's adaptive LIFO follows the queue delay's expiries
			// only; a classifier's deadline is the request's own.
			name: "a request's own deadline does not make it LIFO", adaptiveLIFO: true,
			expire: []string{"a:0:1:1s"}, others: []string{"b:0:1", "c:0:1", "d:0:1"},
			want: []string{"b", "c", "d"}, wantLIFO: []uint64{0},
		},
		{
			name: "a cancelled waiter does not make it LIFO", adaptiveLIFO: true, queueTimeout: timeout, cancel: true,
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:0:1", "d:0:1"},
			want: []string{"b", "c", "d"}, wantLIFO: []uint64{0},
		},
		{
			// DRR alone would give b c d e: b (class 0), then class 1's
			// visit, and so on.
			name: "classes: the newest of all classes", adaptiveLIFO: true, queueTimeout: timeout, classes: classes(1, 1),
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:1:1", "d:0:1", "e:1:1"},
			want: []string{"e", "b", "c", "d"}, wantLIFO: []uint64{0, 1},
		},
		{
			// DRR alone would give c b d e: class 1 entered the ring
			// first, with a. The LIFO grant charges nothing to class 0,
			// whose next visit serves b as if e had never been there
			// (charged, class 0 would have no credit left for b: e c d b).
			name: "classes: the newest is not charged to its class", adaptiveLIFO: true, queueTimeout: timeout, classes: classes(1, 1),
			expire: []string{"a:1:1"}, others: []string{"b:0:1", "c:1:1", "d:1:1", "e:0:1"},
			want: []string{"e", "c", "b", "d"}, wantLIFO: []uint64{1, 0},
		},
		{
			name: "classes without adaptive LIFO", queueTimeout: timeout, classes: classes(1, 1),
			expire: []string{"a:0:1"}, others: []string{"b:0:1", "c:1:1", "d:0:1", "e:1:1"},
			want: []string{"b", "c", "d", "e"}, wantLIFO: []uint64{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{
					Slots: 1, QueueLen: 8, QueueTimeout: tt.queueTimeout, AdaptiveLIFO: tt.adaptiveLIFO, Classes: tt.classes,
				})
				var timedOut uint64
				for episode := range max(tt.episodes, 1) {
					holder := acquireDirect(t, l)
					first := queueNamed(t, l, tt.expire...)
					time.Sleep(timeout / 2)
					others := queueNamed(t, l, tt.others...)
					if tt.cancel {
						for _, n := range first {
							n.cancel()
						}
					} else {
						time.Sleep(timeout / 2)
					}
					synctest.Wait()
					for _, n := range first {
						o, ok := n.c.returned()
						wantErr := error(context.Canceled)
						if !tt.cancel {
							wantErr, timedOut = limiter.ErrQueueTimeout, timedOut+1
						}
						if !ok || !errors.Is(o.err, wantErr) {
							t.Fatalf("episode %d: %s returned %t, %v; want %v", episode, n.name, ok, o.err, wantErr)
						}
					}
					if got := serveAll(t, holder, others); !reflect.DeepEqual(got, tt.want) {
						t.Fatalf("episode %d: grant order %v, want %v", episode, got, tt.want)
					}
					if err := l.CheckInvariants(); err != nil {
						t.Fatalf("episode %d: %v", episode, err)
					}
					s := l.Stats()
					var total uint64
					for i, want := range tt.wantLIFO {
						want *= uint64(episode + 1)
						total += want
						if got := s.Classes[i].DequeuedLIFO; got != want {
							t.Errorf("episode %d: class %d DequeuedLIFO = %d, want %d", episode, i, got, want)
						}
					}
					if s.DequeuedLIFO != total || s.TimedOut != timedOut || s.Holding != 0 || s.Waiting != 0 {
						t.Fatalf("episode %d: %+v; want DequeuedLIFO %d, TimedOut %d, empty", episode, s, total, timedOut)
					}
					if want := uint64(len(tt.others) * (episode + 1)); s.AdmittedQueued != want {
						t.Fatalf("episode %d: AdmittedQueued %d, want %d (DequeuedLIFO among them)", episode, s.AdmittedQueued, want)
					}
				}
			})
		})
	}
}

// TestAdaptiveLIFOWithWaitingLimit checks that the LIFO grant is also
// the one a first token makes, under W.
func TestAdaptiveLIFOWithWaitingLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		l := newLimiter(t, limiter.Options{Slots: 8, WaitingLimit: 1, QueueLen: 8, QueueTimeout: timeout, AdaptiveLIFO: true})
		p, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		first := queueNamed(t, l, "a:0:1")
		time.Sleep(timeout / 2)
		ns := queueNamed(t, l, "b:0:1", "c:0:1", "d:0:1")
		time.Sleep(timeout / 2)
		synctest.Wait()
		if o, ok := first[0].c.returned(); !ok || !errors.Is(o.err, limiter.ErrQueueExpired) {
			t.Fatalf("a: returned %t, %v; want ErrQueueExpired", ok, o.err)
		}
		p.FirstToken()
		synctest.Wait()
		var got []string
		for _, n := range ns {
			if o, ok := n.c.returned(); ok && o.err == nil {
				got = append(got, n.name)
			}
		}
		if !reflect.DeepEqual(got, []string{"d"}) {
			t.Fatalf("the first token admitted %v, want [d]", got)
		}
		if s := l.Stats(); s.DequeuedLIFO != 1 || s.Holding != 2 || s.Prefilling != 1 || s.Waiting != 2 {
			t.Fatalf("%+v", s)
		}
		// The next waiting place goes to the oldest, b, although d (which
		// holds it) releases without a first token.
		ns[2].c.letGo()
		synctest.Wait()
		if o, ok := ns[0].c.returned(); !ok || o.err != nil {
			t.Fatalf("b: returned %t, %v; want admitted", ok, o.err)
		}
		if _, ok := ns[1].c.returned(); ok {
			t.Fatal("c was admitted with b")
		}
		ns[0].c.letGo()
		synctest.Wait()
		ns[1].c.letGo()
		p.Release()
		synctest.Wait()
		if s := l.Stats(); s.DequeuedLIFO != 1 || s.AdmittedQueued != 3 || s.Holding != 0 || s.Prefilling != 0 || s.Waiting != 0 {
			t.Fatalf("at the end: %+v", s)
		}
	})
}

// TestQueueExpiredOrTimeout checks which error ends a wait: ErrQueueExpired
// when Options.QueueTimeout came first, ErrQueueTimeout when the request's
// own deadline did (a tie counts as the request's); both match
// ErrQueueTimeout with errors.Is, and both are counted as TimedOut.
func TestQueueExpiredOrTimeout(t *testing.T) {
	if !errors.Is(limiter.ErrQueueExpired, limiter.ErrQueueTimeout) {
		t.Error("ErrQueueExpired does not match ErrQueueTimeout")
	}
	if errors.Is(limiter.ErrQueueTimeout, limiter.ErrQueueExpired) {
		t.Error("ErrQueueTimeout matches ErrQueueExpired")
	}
	const none = time.Duration(0)
	tests := []struct {
		name         string
		queueTimeout time.Duration
		deadline     time.Duration // Request.Deadline from the start; none: no deadline
		want         error         // exactly this error
		at           time.Duration
	}{
		{name: "queue timeout only", queueTimeout: time.Second, want: limiter.ErrQueueExpired, at: time.Second},
		{name: "queue timeout first", queueTimeout: time.Second, deadline: 3 * time.Second, want: limiter.ErrQueueExpired, at: time.Second},
		{name: "request deadline first", queueTimeout: time.Second, deadline: 400 * time.Millisecond, want: limiter.ErrQueueTimeout, at: 400 * time.Millisecond},
		{name: "request deadline only", deadline: 2 * time.Second, want: limiter.ErrQueueTimeout, at: 2 * time.Second},
		{name: "tie", queueTimeout: time.Second, deadline: time.Second, want: limiter.ErrQueueTimeout, at: time.Second},
		{name: "deadline passed", queueTimeout: time.Second, deadline: -time.Second, want: limiter.ErrQueueTimeout, at: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1, QueueTimeout: tt.queueTimeout})
				holder := acquireDirect(t, l)
				start := time.Now()
				var req limiter.Request
				if tt.deadline != none {
					req.Deadline = start.Add(tt.deadline)
				}
				c := startClient(l, context.Background(), req)
				time.Sleep(tt.at)
				synctest.Wait()
				o, ok := c.returned()
				if !ok {
					t.Fatalf("still waiting after %v", tt.at)
				}
				if o.err != tt.want {
					t.Fatalf("err = %v, want %v", o.err, tt.want)
				}
				if !errors.Is(o.err, limiter.ErrQueueTimeout) {
					t.Fatalf("err = %v does not match ErrQueueTimeout", o.err)
				}
				if got := o.at.Sub(start); got != tt.at {
					t.Fatalf("returned after %v, want %v", got, tt.at)
				}
				checkStats(t, l, limiter.Stats{
					Slots: 1, QueueLen: 1, QueueTimeout: tt.queueTimeout, Holding: 1, AdmittedDirect: 1, TimedOut: 1,
				})
				holder()
			})
		})
	}
}
