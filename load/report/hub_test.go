package report_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// source is a Compute whose load the test sets.
type source struct {
	inFlight atomic.Int64
	computed atomic.Int64
}

func (s *source) compute() report.Snapshot {
	s.computed.Add(1)
	return report.Snapshot{Requests: report.Requests{InFlight: int(s.inFlight.Load()), Limit: 8}}
}

// runHub starts hub.Run until the test ends; call inside a bubble.
func runHub(t *testing.T, hub *report.Hub) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := hub.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func newHub(t *testing.T, src *source, onPublish func(*report.Snapshot)) *report.Hub {
	t.Helper()
	hub, err := report.NewHub(report.HubOptions{Compute: src.compute, OnPublish: onPublish})
	if err != nil {
		t.Fatal(err)
	}
	return hub
}

func TestFirstSnapshotIsSeqOne(t *testing.T) {
	src := &source{}
	src.inFlight.Store(3)
	hub := newHub(t, src, nil)
	s := hub.Latest()
	if s.Seq != 1 || s.Requests.InFlight != 3 || s.At.IsZero() {
		t.Errorf("first snapshot = %+v, want Seq 1, in flight 3, stamped", s)
	}
}

// TestChangePublishedOnNotify: a change is published at once after a
// quiet period, with the next Seq; a Notify without a change publishes
// nothing.
func TestChangePublishedOnNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		var published []uint64
		hub := newHub(t, src, func(s *report.Snapshot) { published = append(published, s.Seq) })
		runHub(t, hub)
		time.Sleep(report.MinInterval) // quiet since the first snapshot
		src.inFlight.Store(1)
		start := time.Now()
		hub.Notify()
		synctest.Wait()
		if s := hub.Latest(); s.Seq != 2 || s.Requests.InFlight != 1 || !s.At.Equal(start) {
			t.Fatalf("after a change: Seq %d, in flight %d, at +%v; want 2, 1, at once", s.Seq, s.Requests.InFlight, s.At.Sub(start))
		}
		hub.Notify() // nothing changed
		time.Sleep(report.MinInterval)
		synctest.Wait()
		if s := hub.Latest(); s.Seq != 2 {
			t.Errorf("a Notify without a change published Seq %d", s.Seq)
		}
		if len(published) != 1 || published[0] != 2 {
			t.Errorf("OnPublish saw %v, want [2]", published)
		}
	})
}

// TestChangesDebounced: a burst of changes within MinInterval gives one
// snapshot at its end with the latest values, never more than one per
// MinInterval.
func TestChangesDebounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		var times []time.Time
		hub := newHub(t, src, func(s *report.Snapshot) { times = append(times, s.At) })
		runHub(t, hub)
		time.Sleep(report.MinInterval)
		for i := 1; i <= 50; i++ {
			src.inFlight.Store(int64(i))
			hub.Notify()
			time.Sleep(report.MinInterval / 10)
		}
		time.Sleep(report.MinInterval)
		synctest.Wait()
		if got := hub.Latest().Requests.InFlight; got != 50 {
			t.Errorf("latest in flight = %d, want 50", got)
		}
		// 50 changes over 5 intervals: about 6 publications, never two
		// within MinInterval.
		if len(times) > 7 || len(times) < 2 {
			t.Errorf("published %d snapshots for 50 changes over 5 intervals", len(times))
		}
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d < report.MinInterval {
				t.Errorf("snapshots %d and %d only %v apart", i-1, i, d)
			}
		}
	})
}

// TestHeartbeat: with nothing changing, a snapshot is published every
// Heartbeat, each with the next Seq.
func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		hub := newHub(t, src, nil)
		runHub(t, hub)
		for want := uint64(2); want <= 4; want++ {
			time.Sleep(report.Heartbeat)
			synctest.Wait()
			if s := hub.Latest(); s.Seq != want {
				t.Fatalf("after %d heartbeats Seq = %d, want %d", want-1, s.Seq, want)
			}
		}
	})
}

// TestWatchGetsLatestAndSkips: Watch starts with the latest snapshot,
// then gets each newer one; a slow watcher sees the latest, not a
// backlog.
func TestWatchGetsLatestAndSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		hub := newHub(t, src, nil)
		runHub(t, hub)
		ctx, cancel := context.WithCancel(t.Context())
		var seen []uint64
		block := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			err := hub.Watch(ctx, func(s *report.Snapshot) error {
				seen = append(seen, s.Seq)
				if len(seen) == 1 {
					<-block // slow on the first one
				}
				return nil
			})
			if err != context.Canceled {
				t.Errorf("Watch = %v, want context.Canceled", err)
			}
		})
		synctest.Wait()
		for i := 1; i <= 3; i++ {
			time.Sleep(2 * report.MinInterval) // each change its own snapshot
			src.inFlight.Store(int64(i))
			hub.Notify()
		}
		synctest.Wait()
		close(block)
		synctest.Wait()
		cancel()
		wg.Wait()
		if len(seen) != 2 || seen[0] != 1 || seen[1] != 4 {
			t.Errorf("watcher saw %v, want [1 4] (the first, then the latest)", seen)
		}
	})
}

func TestRunTwiceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := newHub(t, &source{}, nil)
		runHub(t, hub)
		synctest.Wait()
		if err := hub.Run(t.Context()); err == nil {
			t.Error("second Run succeeded")
		}
	})
}

func TestNewHubValidates(t *testing.T) {
	for name, opts := range map[string]report.HubOptions{
		"no compute":              {},
		"negative heartbeat":      {Compute: (&source{}).compute, Heartbeat: -1},
		"TTL under the heartbeat": {Compute: (&source{}).compute, Heartbeat: time.Second, TTL: time.Second - 1},
		"negative TTL":            {Compute: (&source{}).compute, TTL: -time.Second},
	} {
		if _, err := report.NewHub(opts); err == nil {
			t.Errorf("%s: NewHub succeeded", name)
		}
	}
}

// TestWatchEndsWhenRunReturns: a watcher is told the hub stopped rather
// than left waiting for snapshots that will never come.
func TestWatchEndsWhenRunReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := newHub(t, &source{}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { _ = hub.Run(ctx) })
		got := make(chan error, 1)
		wg.Go(func() { got <- hub.Watch(t.Context(), func(*report.Snapshot) error { return nil }) })
		synctest.Wait()
		cancel()
		wg.Wait()
		if err := <-got; !errors.Is(err, report.ErrStopped) {
			t.Errorf("Watch = %v, want ErrStopped", err)
		}
	})
}

// TestNotifyStormComputesOncePerInterval: notifications that change
// nothing (a token that fills no new block, a refusal) cost at most one
// computation per MinInterval, whatever their number.
func TestNotifyStormComputesOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		hub := newHub(t, src, nil)
		runHub(t, hub)
		synctest.Wait()
		before := src.computed.Load()
		for range 1000 { // 100 ms of notifications, 10 per millisecond
			for range 10 {
				hub.Notify()
			}
			time.Sleep(report.MinInterval / 100)
			synctest.Wait()
		}
		// 100 ms: about 10 computations, never 1000.
		if n := src.computed.Load() - before; n > 12 {
			t.Errorf("%d computations for 100 ms of notifications, want at most one per %v", n, report.MinInterval)
		}
		if s := hub.Latest(); s.Seq != 1 {
			t.Errorf("Seq = %d: nothing changed, nothing to publish", s.Seq)
		}
	})
}
