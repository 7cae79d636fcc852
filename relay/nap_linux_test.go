package relay

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// TestWindowNapOK: a window allows naps unless more than one of its
// events in napRequestShare was a parked client's.
func TestWindowNapOK(t *testing.T) {
	tests := []struct {
		events, requests int
		want             bool
	}{
		{events: 0, requests: 0, want: true},
		{events: 1000, requests: 0, want: true},
		{events: 16 * napRequestShare, requests: 16, want: true},
		{events: 16 * napRequestShare, requests: 17, want: false},
		{events: 200, requests: 200, want: false}, // the fast path: every event a request
	}
	for _, tt := range tests {
		if got := windowNapOK(tt.events, tt.requests); got != tt.want {
			t.Errorf("windowNapOK(%d events, %d requests) = %v, want %v", tt.events, tt.requests, got, tt.want)
		}
	}
}

// TestBusyWindowDecidesNaps: each full window decides whether the loop
// may nap in the next, from its requests' share; a loop naps only with
// a nap's length set.
func TestBusyWindowDecidesNaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &loop{busyEvents: defaultBusyEvents, napMillis: napMillis}
		peer := &loop{} // carrying a stream: the loop's streams are spread
		peer.open.Store(1)
		l.peers = []*loop{l, peer}
		steps := []struct {
			events, requests int
			want             bool
		}{
			{events: 1000, requests: 0, want: true},
			{events: 1000, requests: 1000, want: false},
			{events: 1600, requests: 100, want: true},
			{events: 1600, requests: 101, want: false},
		}
		l.busy(time.Now())
		for i, st := range steps {
			l.windowEvents, l.windowRequests = st.events, st.requests
			time.Sleep(busyWindow)
			l.busy(time.Now())
			if got := l.mayNap(); got != st.want {
				t.Errorf("step %d: %d events, %d of them requests: mayNap %v, want %v", i, st.events, st.requests, got, st.want)
			}
		}
		l.napMillis = 0
		if l.mayNap() {
			t.Error("mayNap with no nap's length")
		}
	})
}

// TestNapEndsForAWake: a loop napping (its naps a minute long, though the
// runtime's preemption signal cuts a held call after some 10 ms) takes a
// stream handed over and stops when the relay does; TestNapSetHoldsTheWake
// checks that a wake ends the nap itself.
func TestNapEndsForAWake(t *testing.T) {
	r := newBusyRelay(t, 2)
	l := r.loops[0]
	l.napMillis = int(time.Minute / time.Millisecond)
	r.loops[1].open.Add(1) // as if carrying a stream: the first loop's are spread
	stop := runRelay(t, r)
	quiet := harnessOn(t, r, "") // open and silent: the loop holds, finds nothing, naps
	time.Sleep(3 * busyWindow)   // a window ends: naps allowed from the next
	const body = "5\r\nhello\r\n0\r\n\r\n"
	h := harnessOn(t, r, body)
	if got := h.readN(t, len(body)); string(got) != body {
		t.Fatalf("the client got %q, want %q", got, body)
	}
	if res := h.result(t); !res.Ended {
		t.Fatalf("the stream handed over during the nap: %+v, want ended", res)
	}
	stop() // fails past the test's wait if the nap held the loop
	r.loops[1].open.Add(-1)
	if res := quiet.result(t); !errors.Is(res.Err, ErrShutdown) {
		t.Errorf("the quiet stream at the stop: %+v, want ErrShutdown", res)
	}
	if l.naps == 0 {
		t.Error("the loop never napped")
	}
}

// TestNapOnlyWhileSpread: a loop may nap only while another loop of its
// relay carries streams; a relay of one loop never naps.
func TestNapOnlyWhileSpread(t *testing.T) {
	tests := []struct {
		loops     int
		peersOpen int64 // streams open on each loop but the first
		want      bool
	}{
		{loops: 1, want: false},
		{loops: 2, peersOpen: 0, want: false}, // a light load: the first loop alone
		{loops: 2, peersOpen: 1, want: true},
		{loops: 3, peersOpen: 5, want: true},
	}
	for _, tt := range tests {
		r, err := New(tt.loops)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range r.loops[1:] {
			l.open.Store(tt.peersOpen)
		}
		l := r.loops[0]
		l.napOK = true
		if got := l.mayNap(); got != tt.want {
			t.Errorf("%d loops, %d streams on each other: mayNap %v, want %v", tt.loops, tt.peersOpen, got, tt.want)
		}
		r.closeLoops()
	}
}

// TestNapSetHoldsTheWake: the nap set reports the wake pipe once a wake
// was written to it, and nothing before: a nap ends for a stream handed
// over or the loop's stop, and for nothing else but its time.
func TestNapSetHoldsTheWake(t *testing.T) {
	r, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.closeLoops)
	l := r.loops[0]
	var evs [4]syscall.EpollEvent
	if n, err := rawio.EpollWait(l.napfd, evs[:]); n != 0 || err != nil {
		t.Fatalf("the nap set before a wake: %d events (%v), want none", n, err)
	}
	l.wake()
	n, err := rawio.EpollWait(l.napfd, evs[:])
	if n != 1 || err != nil || int(evs[0].Fd) != l.wakeR {
		t.Fatalf("the nap set after a wake: %d events %v (%v), want the wake pipe's", n, evs[:n], err)
	}
}

// TestParkedClientsCountAsRequests: a parked client's next request counts
// in the loop's window as a request, which keeps a loop from napping when
// they are more than a sliver of its events.
func TestParkedClientsCountAsRequests(t *testing.T) {
	prev := runtime.GOMAXPROCS(1) // no held waits: nothing ends the window
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	r, _ := startRelay(t, 1)
	l := r.loops[0]
	m, _, resumed := parkedStream(t, r, time.Minute)
	if _, err := m.client.Write([]byte("GET /next")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-resumed:
	case <-time.After(wait):
		t.Fatal("the client's next request did not resume its connection")
	}
	got := make(chan int, 1)
	if err := l.queue(func() { got <- l.windowRequests }); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 1 {
		t.Errorf("the window counts %d requests after one parked client's, want 1", n)
	}
}

// TestNappingLoopCarriesStreams: a loop that naps between its events
// (its streams spread: the other loop counted as carrying spillStreams)
// carries every stream's bytes whole and in order, its engines writing
// a little at a time, naps and all.
func TestNappingLoopCarriesStreams(t *testing.T) {
	r := newBusyRelay(t, 2)
	r.loops[0].open.Add(spillStreams) // as if full: the streams go to the second loop, spread
	stop := runRelay(t, r)
	const streams, events = 8, 200
	hs := make([]*harness, streams)
	for i := range hs {
		hs[i] = harnessOn(t, r, "")
	}
	for i, h := range hs {
		go func() {
			for n := range events {
				ev := fmt.Sprintf("data: {\"s\":%d,\"n\":%d}\n\n", i, n)
				if _, err := fmt.Fprintf(h.engine, "%x\r\n%s\r\n", len(ev), ev); err != nil {
					return
				}
				time.Sleep(50 * time.Microsecond) // events apart, so that the loop catches up and naps
			}
			_, _ = h.engine.Write([]byte("0\r\n\r\n"))
		}()
	}
	for i, h := range hs {
		var want bytes.Buffer
		for n := range events {
			ev := fmt.Sprintf("data: {\"s\":%d,\"n\":%d}\n\n", i, n)
			fmt.Fprintf(&want, "%x\r\n%s\r\n", len(ev), ev)
		}
		want.WriteString("0\r\n\r\n")
		if got := h.readN(t, want.Len()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("stream %d: the client got other bytes than the engine sent", i)
		}
		if res := h.result(t); !res.Ended || res.Sent != int64(want.Len()) {
			t.Errorf("stream %d: %+v, want ended with %d bytes sent", i, res, want.Len())
		}
	}
	stop()
	r.loops[0].open.Add(-spillStreams)
	if r.loops[1].naps == 0 {
		t.Error("the second loop never napped")
	}
	if r.loops[0].naps != 0 {
		t.Errorf("the first loop, carrying nothing, napped %d times", r.loops[0].naps)
	}
}
