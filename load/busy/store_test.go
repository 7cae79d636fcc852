package busy_test

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/load/busy"
)

func newStore(t *testing.T, initial busy.Thresholds) *busy.Store {
	t.Helper()
	return newStoreNotifying(t, initial, nil)
}

func newStoreNotifying(t *testing.T, initial busy.Thresholds, onChange func()) *busy.Store {
	t.Helper()
	s, err := busy.NewStore(initial, onChange)
	if err != nil {
		t.Fatalf("NewStore(%v): %v", initial, err)
	}
	return s
}

func TestNewStoreInvalid(t *testing.T) {
	s, err := busy.NewStore(decodeOnly(1.5), nil)
	if err == nil || s != nil {
		t.Fatalf("NewStore(decode 1.5) = %v, %v; want nil and an error", s, err)
	}
	if !strings.Contains(err.Error(), "active_decode_blocks_threshold") {
		t.Errorf("error %q does not name the field", err)
	}
}

func TestStoreCopies(t *testing.T) {
	initial := decodeOnly(0.5)
	s := newStore(t, initial)
	*initial.ActiveDecodeBlocks = 0.9 // the caller's pointer, after NewStore
	loaded := s.Load()
	*loaded.ActiveDecodeBlocks = 0.7 // a reader's copy
	patch := busy.Thresholds{ActivePrefillTokens: new(uint64(5))}
	if _, err := s.Update(patch); err != nil {
		t.Fatal(err)
	}
	*patch.ActivePrefillTokens = 6 // the caller's pointer, after Update
	want := "active_decode_blocks_threshold=0.5 active_prefill_tokens_threshold=5 active_prefill_tokens_threshold_frac=none"
	if got := s.Load().String(); got != want {
		t.Errorf("Load() = %s, want %s", got, want)
	}
}

func TestStoreUpdate(t *testing.T) {
	initial := busy.Thresholds{ActiveDecodeBlocks: new(0.8), ActivePrefillTokens: new(uint64(100))}
	for _, tc := range []struct {
		name        string
		patch       busy.Thresholds
		want        string // the store after the update
		wantErr     bool
		wantChanged bool
	}{
		{name: "one field, the others kept", patch: busy.Thresholds{ActivePrefillTokensFrac: new(1.5)},
			want:        "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=1.5",
			wantChanged: true},
		{name: "overwrite", patch: busy.Thresholds{ActiveDecodeBlocks: new(0.2)},
			want:        "active_decode_blocks_threshold=0.2 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=none",
			wantChanged: true},
		{name: "empty patch changes nothing", patch: busy.Thresholds{},
			want: "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=none"},
		{name: "same values change nothing", patch: busy.Thresholds{ActiveDecodeBlocks: new(0.8)},
			want: "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=none"},
		{name: "invalid is all or nothing",
			patch:   busy.Thresholds{ActivePrefillTokens: new(uint64(1)), ActivePrefillTokensFrac: new(-1.0)},
			want:    "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=none",
			wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			s := newStoreNotifying(t, initial, func() { calls.Add(1) })
			got, err := s.Update(tc.patch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Update() error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got.String() != tc.want {
				t.Errorf("Update() = %s, want %s", got, tc.want)
			}
			if now := s.Load().String(); now != tc.want {
				t.Errorf("Load() = %s, want %s", now, tc.want)
			}
			// Once per change, and never for an update that changes nothing.
			if want := map[bool]int64{false: 0, true: 1}[tc.wantChanged]; calls.Load() != want {
				t.Errorf("onChange called %d times, want %d", calls.Load(), want)
			}
		})
	}
}

// TestStoreConcurrent races writers, readers and a watcher (run it with
// -race). Readers must only ever see a valid value that some writer wrote,
// and the watcher, woken through onChange as the hub is (a one-slot
// channel that merges notifications), must see the last write.
func TestStoreConcurrent(t *testing.T) {
	notify := make(chan struct{}, 1)
	s := newStoreNotifying(t, decodeOnly(0), func() {
		select {
		case notify <- struct{}{}:
		default:
		}
	})
	const writers, writes = 4, 200
	final := 0.999
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				v := float64(w*writes+i) / (writers * writes) // all < final
				if _, err := s.Update(decodeOnly(v)); err != nil {
					t.Errorf("Update(%v): %v", v, err)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range writes {
				th := s.Load()
				if th.ActiveDecodeBlocks == nil || th.Validate() != nil || *th.ActiveDecodeBlocks >= final {
					t.Errorf("Load() = %v: not a value written", th)
				}
			}
		})
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if *s.Load().ActiveDecodeBlocks == final {
				return
			}
			<-notify
		}
	}()
	wg.Wait()
	if _, err := s.Update(decodeOnly(final)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watched:
	case <-time.After(10 * time.Second): // a bound, not a wait: a lost wakeup hangs
		t.Fatal("the watcher missed the last change")
	}
}

// TestStoreOnChangeAfterTheStore: onChange runs once the new value is in
// force, and outside the Store's lock, so that it may read and even
// update the Store.
func TestStoreOnChangeAfterTheStore(t *testing.T) {
	var s *busy.Store
	var seen []string
	s = newStoreNotifying(t, decodeOnly(0.5), func() {
		seen = append(seen, formatFloat(s.Load().ActiveDecodeBlocks))
		if _, err := s.Update(s.Load()); err != nil { // no change: no second call
			t.Errorf("Update from onChange: %v", err)
		}
	})
	if _, err := s.Update(decodeOnly(0.25)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "0.25" {
		t.Errorf("onChange saw %v, want one call seeing 0.25", seen)
	}
}

func formatFloat(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}
