package relay

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestLoopHoldsOnlyWithAProcessorToSpare: a loop with a stream open waits
// holding its processor when GOMAXPROCS leaves the rest of the program
// one besides the loops, and parks in Go's netpoller when it does not;
// the stream is carried whole either way.
func TestLoopHoldsOnlyWithAProcessorToSpare(t *testing.T) {
	tests := []struct {
		name  string
		procs int
		held  bool
	}{
		{name: "a processor to spare", procs: 2, held: true},
		{name: "none to spare", procs: 1, held: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := runtime.GOMAXPROCS(tt.procs)
			t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
			r, err := New(1)
			if err != nil {
				t.Fatal(err)
			}
			r.loops[0].busyEvents = 0 // busy from its first window on
			stop := runRelay(t, r)
			h := harnessOn(t, r, "")
			// Two events, a window apart: the second finds the loop busy.
			const body = "5\r\nhello\r\n0\r\n\r\n"
			if _, err := h.engine.Write([]byte(body[:10])); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * busyWindow)
			if _, err := h.engine.Write([]byte(body[10:])); err != nil {
				t.Fatal(err)
			}
			if got := h.readN(t, len(body)); string(got) != body {
				t.Fatalf("the client got %q, want %q", got, body)
			}
			if res := h.result(t); !res.Ended {
				t.Fatalf("result = %+v, want ended", res)
			}
			stop() // the loop's counter is read once its goroutine ended
			if held := r.loops[0].heldWaits > 0; held != tt.held {
				t.Errorf("GOMAXPROCS %d, one loop: %d held waits, want held %v", tt.procs, r.loops[0].heldWaits, tt.held)
			}
		})
	}
}

// TestBusy: a loop is busy for a window once the window before took
// busyEvents events or more.
func TestBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &loop{busyEvents: defaultBusyEvents}
		steps := []struct {
			events int // taken during the window
			want   bool
		}{
			{events: defaultBusyEvents, want: true},
			{events: defaultBusyEvents - 1, want: false},
			{events: 10 * defaultBusyEvents, want: true},
			{events: 0, want: false},
		}
		l.busy(time.Now()) // the first window begins
		for i, st := range steps {
			l.windowEvents += st.events
			time.Sleep(busyWindow)
			if got := l.busy(time.Now()); got != st.want {
				t.Errorf("step %d: %d events in a window: busy %v, want %v", i, st.events, got, st.want)
			}
			l.windowEvents += 10 * defaultBusyEvents // in the next window: not counted before it ends
			if got := l.busy(time.Now()); got != st.want {
				t.Errorf("step %d: busy %v within the next window, want %v until it ends", i, got, st.want)
			}
			l.windowEvents -= 10 * defaultBusyEvents
		}
	})
}

// TestPickFillsALoopFirst: a new stream (pick, by streams open) or
// waiting client (pickWaiting, by clients waiting) goes to the first loop
// with fewer than spillStreams, and past that to the loop with the
// fewest.
func TestPickFillsALoopFirst(t *testing.T) {
	r, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.closeLoops)
	tests := []struct {
		load [2]int64
		want int
	}{
		{load: [2]int64{0, 0}, want: 0},
		{load: [2]int64{spillStreams - 1, 0}, want: 0},
		{load: [2]int64{spillStreams, 0}, want: 1},
		{load: [2]int64{spillStreams, spillStreams}, want: 0},
		{load: [2]int64{spillStreams + 100, spillStreams}, want: 1},
		{load: [2]int64{spillStreams, spillStreams + 100}, want: 0},
		{load: [2]int64{0, spillStreams + 100}, want: 0},
	}
	picks := []struct {
		name    string
		pick    func() *loop
		counter func(*loop) *atomic.Int64
	}{
		{"pick", r.pick, func(l *loop) *atomic.Int64 { return &l.open }},
		{"pickWaiting", r.pickWaiting, func(l *loop) *atomic.Int64 { return &l.waiting }},
	}
	for _, p := range picks {
		for _, tt := range tests {
			for _, l := range r.loops {
				l.open.Store(0)
				l.waiting.Store(0)
			}
			for i, n := range tt.load {
				p.counter(r.loops[i]).Store(n)
			}
			if got := p.pick(); got != r.loops[tt.want] {
				t.Errorf("%s, loads %v: picked loop %d, want %d", p.name, tt.load, slices.Index(r.loops, got), tt.want)
			}
		}
	}
}

// newBusyRelay returns a relay of n loops that hold (GOMAXPROCS raised to
// leave a processor besides them, until the test ends), busy from their
// first window.
func newBusyRelay(t *testing.T, n int) *Relay {
	t.Helper()
	prev := runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), n+1))
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	r, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range r.loops {
		l.busyEvents = 0
	}
	return r
}

// TestHeldLoopsCarryStreams runs streams through two loops that always
// hold (busy from their first window): every stream's bytes arrive whole
// and in order while the runtime stops the world for collections (a held
// wait is interrupted and the loop preempted), a client that hangs up
// ends its stream alone, and the streams still open when the relay stops
// end with ErrShutdown.
func TestHeldLoopsCarryStreams(t *testing.T) {
	r := newBusyRelay(t, 2)
	stop := runRelay(t, r)
	const streams, events = 16, 100
	hs := make([]*harness, streams)
	for i := range hs {
		hs[i] = harnessOn(t, r, "")
	}
	stopGC := make(chan struct{})
	gcDone := make(chan struct{})
	go func() { // stop-the-world pauses while the loops hold
		defer close(gcDone)
		for {
			select {
			case <-stopGC:
				return
			case <-time.After(time.Millisecond):
				runtime.GC()
			}
		}
	}()
	for i, h := range hs {
		go func() {
			for n := range events {
				ev := fmt.Sprintf("data: {\"s\":%d,\"n\":%d}\n\n", i, n)
				if _, err := fmt.Fprintf(h.engine, "%x\r\n%s\r\n", len(ev), ev); err != nil {
					return // the client that hung up: the relay closed the engine's side
				}
			}
			if i%2 == 0 {
				_, _ = h.engine.Write([]byte("0\r\n\r\n")) // the odd ones stay open
			}
		}()
	}
	gone := hs[1]
	_ = gone.client.Close()
	if res := gone.result(t); !res.ClientGone {
		t.Errorf("the stream whose client hung up: %+v, want client gone", res)
	}
	for i, h := range hs {
		if i == 1 {
			continue
		}
		var want bytes.Buffer
		for n := range events {
			ev := fmt.Sprintf("data: {\"s\":%d,\"n\":%d}\n\n", i, n)
			fmt.Fprintf(&want, "%x\r\n%s\r\n", len(ev), ev)
		}
		if i%2 == 0 {
			want.WriteString("0\r\n\r\n")
		}
		if got := h.readN(t, want.Len()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("stream %d: the client got other bytes than the engine sent", i)
		}
		if i%2 == 0 {
			if res := h.result(t); !res.Ended || res.Sent != int64(want.Len()) {
				t.Errorf("stream %d: %+v, want ended with %d bytes sent", i, res, want.Len())
			}
		}
	}
	close(stopGC)
	<-gcDone
	if open := r.Open(); open != streams/2-1 {
		t.Errorf("Open() = %d before the stop, want %d (the odd streams but the one cut)", open, streams/2-1)
	}
	stop()
	for i := 3; i < streams; i += 2 {
		if res := hs[i].result(t); !errors.Is(res.Err, ErrShutdown) {
			t.Errorf("stream %d, open at the stop: %+v, want ErrShutdown", i, res)
		}
	}
	held := 0
	for i, l := range r.loops {
		held += l.heldWaits
		if n := l.open.Load(); n != 0 {
			t.Errorf("loop %d counts %d streams after the stop, want 0", i, n)
		}
	}
	if held == 0 {
		t.Error("no held wait: the loops parked in the netpoller")
	}
}
