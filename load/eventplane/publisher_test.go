package eventplane

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

const testSubject = "namespace.dynamo.component.backend.endpoint.generate.kv_metrics"

// start runs a hub over ld and a Publisher fed by it, talking to f; the
// returned function stops both and waits for them.
func start(t *testing.T, ld *load, f *fakeServer, heartbeat, debounce time.Duration) (*report.Hub, func()) {
	t.Helper()
	hub, err := report.NewHub(report.HubOptions{Compute: ld.compute, MinInterval: time.Millisecond, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{
		URL: "nats://nats.test:4222", Endpoint: Endpoint{"dynamo", "backend", "generate"}, WorkerID: 42,
		Heartbeat: heartbeat, Debounce: debounce, Dial: f.dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = hub.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx, hub) })
	return hub, func() { cancel(); wg.Wait() }
}

// recv returns the next message, failing after a minute of (fake) time.
func recv(t *testing.T, f *fakeServer) message {
	t.Helper()
	select {
	case m := <-f.msgs:
		return m
	case <-time.After(time.Minute):
		t.Fatal("no message within a minute")
	}
	return message{}
}

// pending returns the messages received so far without waiting.
func pending(f *fakeServer) []message {
	synctest.Wait()
	var out []message
	for {
		select {
		case m := <-f.msgs:
			out = append(out, m)
		default:
			return out
		}
	}
}

func kvs(ms []message) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.kv())
	}
	return out
}

func TestPublisherFirstMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ld := &load{}
		ld.set(0, 5)
		f := newFakeServer(t)
		_, stop := start(t, ld, f, time.Hour, 20*time.Millisecond)
		defer stop()
		m := recv(t, f)
		if m.subject != testSubject {
			t.Errorf("subject %q, want %q", m.subject, testSubject)
		}
		want := map[string]any{"publisher_id": uint64(42), "sequence": uint64(0), "topic": Topic,
			"published_at": uint64(m.at.UnixMilli())}
		for k, v := range want {
			if m.env[k] != v {
				t.Errorf("envelope %s = %v, want %v", k, m.env[k], v)
			}
		}
		if len(m.load) != 3 || m.load["worker_id"] != uint64(42) || m.rank() != 0 || m.kv() != 5 {
			t.Errorf("payload %v, want worker_id 42, dp_rank 0, kv_used_blocks 5 and nothing else", m.load)
		}
	})
}

func TestPublisherDebounceKeepsThePeak(t *testing.T) {
	tests := []struct {
		name   string
		values []int64 // set 10 ms apart, inside one 50 ms window
		want   []uint64
	}{
		{"rise", []int64{8, 12}, []uint64{12}},
		{"spike and fall", []int64{40, 7}, []uint64{40, 7}},
		{"spike and back", []int64{40, 5}, []uint64{40, 5}},
		{"fall", []int64{3, 1}, []uint64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ld := &load{}
				ld.set(0, 5)
				f := newFakeServer(t)
				hub, stop := start(t, ld, f, time.Hour, 50*time.Millisecond)
				defer stop()
				recv(t, f)
				first := time.Now()
				for _, v := range tt.values {
					ld.set(0, v)
					hub.Notify()
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(time.Second)
				got := pending(f)
				if !slices.Equal(kvs(got), tt.want) {
					t.Fatalf("published %v, want %v", kvs(got), tt.want)
				}
				if d := got[0].at.Sub(first); d < 50*time.Millisecond || d > 60*time.Millisecond {
					t.Errorf("published %v after the first change, want the 50ms window", d)
				}
				for i, m := range got {
					if m.seq() != uint64(i+1) {
						t.Errorf("message %d has sequence %d, want %d", i, m.seq(), i+1)
					}
				}
			})
		})
	}
}

func TestPublisherHeartbeatSkipsUnknownRanks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ld := &load{}
		ld.set(0, 5)
		ld.set(1, -1) // unknown: never published, not as 0 either
		ld.set(2, 0)
		f := newFakeServer(t)
		_, stop := start(t, ld, f, time.Second, 20*time.Millisecond)
		defer stop()
		time.Sleep(3500 * time.Millisecond)
		got := pending(f)
		var ranks []uint64
		for _, m := range got {
			ranks = append(ranks, m.rank())
		}
		// The first publication, then three heartbeats, ranks 0 and 2 each.
		want := []uint64{0, 2, 0, 2, 0, 2, 0, 2}
		if !slices.Equal(ranks, want) {
			t.Fatalf("published ranks %v, want %v", ranks, want)
		}
		// The heartbeat ticks from the publisher's start, before it has
		// connected: the first comes within 1s of the first publication
		// (how much within depends on when the connection was made), the
		// others exactly 1s apart.
		if d := got[2].at.Sub(got[0].at); d <= 0 || d > time.Second {
			t.Errorf("the first heartbeat came %v after the first publication, want within 1s", d)
		}
		for i := 4; i < len(got); i += 2 {
			if d := got[i].at.Sub(got[i-2].at); d != time.Second {
				t.Errorf("heartbeat %d came %v after the previous one, want 1s", i/2, d)
			}
		}
	})
}

func TestPublisherReconnectsWithTheLatestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ld := &load{}
		ld.set(0, 5)
		ld.set(1, 6)
		f := newFakeServer(t)
		f.reject = 1 // the first handshake is refused: a retry follows
		hub, stop := start(t, ld, f, time.Hour, 20*time.Millisecond)
		defer stop()
		if got := kvs([]message{recv(t, f), recv(t, f)}); !slices.Equal(got, []uint64{5, 6}) {
			t.Fatalf("first publication %v, want [5 6]", got)
		}
		f.setDown(true) // the server goes away for 3 s
		synctest.Wait()
		ld.set(0, 30)
		hub.Notify()
		time.Sleep(time.Second)
		ld.set(0, 9) // changes while disconnected: only the latest matters
		hub.Notify()
		time.Sleep(2 * time.Second)
		f.setDown(false)
		time.Sleep(10 * time.Second)
		got := pending(f)
		if !slices.Equal(kvs(got), []uint64{9, 6}) {
			t.Fatalf("after reconnecting published %v, want the latest of each rank, [9 6]", kvs(got))
		}
		f.mu.Lock()
		dials := f.dials
		f.mu.Unlock()
		if dials != 3 {
			t.Errorf("dialled %d times, want 3 (refused, accepted, reconnected)", dials)
		}
		if got[0].seq() != 2 {
			t.Errorf("sequence after reconnecting %d, want 2: it keeps increasing", got[0].seq())
		}
	})
}

func TestNewRejects(t *testing.T) {
	ep := Endpoint{"a", "b", "c"}
	tests := []struct {
		name string
		opts Options
	}{
		{"no url", Options{Endpoint: ep}},
		{"http url", Options{URL: "http://h:4222", Endpoint: ep}},
		{"no port", Options{URL: "nats://h", Endpoint: ep}},
		{"path", Options{URL: "nats://h:4222/x", Endpoint: ep}},
		{"no endpoint", Options{URL: "nats://h:4222"}},
		{"negative heartbeat", Options{URL: "nats://h:4222", Endpoint: ep, Heartbeat: -1}},
	}
	for _, tt := range tests {
		if _, err := New(tt.opts); err == nil {
			t.Errorf("%s: New accepted %+v", tt.name, tt.opts)
		}
	}
}
