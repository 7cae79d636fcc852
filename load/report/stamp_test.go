package report_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// TestStampsOnEverySnapshot: every snapshot a Hub publishes, the first,
// changes and heartbeats alike, carries the Hub's Epoch and TTL, and the
// defaults are a random non-zero epoch and three heartbeats.
func TestStampsOnEverySnapshot(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      report.HubOptions
		wantEpoch uint64 // 0: any but 0
		wantTTL   time.Duration
	}{
		{"defaults", report.HubOptions{}, 0, 3 * report.Heartbeat},
		{"TTL from the heartbeat", report.HubOptions{Heartbeat: 200 * time.Millisecond}, 0, 600 * time.Millisecond},
		{"set", report.HubOptions{Epoch: 42, TTL: 5 * time.Second}, 42, 5 * time.Second},
		{"TTL of one heartbeat", report.HubOptions{TTL: report.Heartbeat}, 0, report.Heartbeat},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &source{}
				opts := tt.opts
				opts.Compute = src.compute
				hub, err := report.NewHub(opts)
				if err != nil {
					t.Fatal(err)
				}
				first := hub.Latest()
				if first.Epoch == 0 || (tt.wantEpoch != 0 && first.Epoch != tt.wantEpoch) || first.TTL != tt.wantTTL {
					t.Fatalf("first snapshot: epoch %d, TTL %v; want epoch %d (0: any but 0), TTL %v",
						first.Epoch, first.TTL, tt.wantEpoch, tt.wantTTL)
				}
				runHub(t, hub)
				src.inFlight.Store(1)
				hub.Notify() // a change
				synctest.Wait()
				time.Sleep(3 * report.Heartbeat) // and heartbeats
				synctest.Wait()
				s := hub.Latest()
				if s.Seq < 3 || s.Epoch != first.Epoch || s.TTL != first.TTL {
					t.Errorf("snapshot %d: epoch %d, TTL %v; want %d, %v as in the first", s.Seq, s.Epoch, s.TTL,
						first.Epoch, first.TTL)
				}
			})
		})
	}
}

// TestEpochPerHub: two Hubs, as two processes would have, draw different
// epochs, so a reader tells a restarted worker from the one it knew.
func TestEpochPerHub(t *testing.T) {
	seen := map[uint64]bool{}
	for range 16 {
		epoch := newHub(t, &source{}, nil).Latest().Epoch
		if seen[epoch] {
			t.Fatalf("epoch %d drawn twice in 16 hubs", epoch)
		}
		seen[epoch] = true
	}
}
