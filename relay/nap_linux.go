package relay

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/slotgate/slotgate/internal/rawio"
)

// A busy loop whose streams are spread over several loops naps when it
// finds its set empty, before it waits: for napMillis it waits on its nap
// set, which holds the wake pipe alone, so that a stream handed over or
// the relay's stop ends the nap at once while the streams' events do not.
// Those wait in the set and are taken together at the nap's end.
//
// Loops that share the streams each take a part of their events, and so
// catch up and sleep in epoll_wait more often than one loop would, the
// engine's next write waking each for a few events: at 1024 streams on two
// cores two loops took some 11 events a wait where one loop took 31, and
// cost 4–7% more CPU per event than one. With the nap each wake-up takes
// a millisecond's events: over 16 and 12 same-run pairs, two loops spent
// 3.4% and 4.2% less CPU per event and added 1.1 and 1.5 ms less ITL p99
// than without it (BENCHMARKS.md, "Loops that nap"). An event pays at most the nap in
// delay, a tenth of a token stream's gaps at most. One loop carrying every
// stream, whose waits already take tens of events, gained nothing, and its
// streams' TTFT p50 rose by a millisecond and more: so a loop naps only
// while another loop of its relay carries streams too (spread); a relay
// of one loop, or of several under a light load (the first loop takes
// spillStreams before the next gets any), never naps.
//
// Requests are not token events: a kept client's next request, or a
// waiting client's, would pay the nap in latency, and on the fast path
// they are every event. So a loop naps only when its last window's events
// made it busy and at most one in napRequestShare was a parked client's
// (mayNap).
const (
	napMillis       = 1
	napRequestShare = 16
)

// mayNap reports whether the loop may nap now: its last full window
// allows it (busy sets napOK at each window's end), and its streams are
// spread.
func (l *loop) mayNap() bool { return l.napOK && l.napMillis > 0 && l.spread() }

// spread reports whether another loop of the relay carries streams.
func (l *loop) spread() bool {
	for _, p := range l.peers {
		if p != l && p.open.Load() > 0 {
			return true
		}
	}
	return false
}

// windowNapOK is what a window of events, requests of them, says of the
// next: naps, unless requests were more than one event in napRequestShare.
func windowNapOK(events, requests int) bool {
	return requests*napRequestShare <= events
}

// nap waits up to l.napMillis on the nap set: a wake ends it early. An
// interrupted nap (a stop-the-world's signal) is a short one.
func (l *loop) nap() error {
	l.naps++
	_, err := rawio.EpollWaitFor(l.napfd, l.napEvent[:], l.napMillis)
	if err != nil && !errors.Is(err, syscall.EINTR) {
		return err
	}
	return nil
}

// newNapSet returns an epoll instance holding wakeR alone.
func newNapSet(wakeR int) (int, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("relay: epoll_create1: %w", err)
	}
	if err := watchWake(fd, wakeR); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}
