package relay

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// busy reports whether the loop took busyEvents or more events in its
// last full window of busyWindow. A busy loop waits held; a lighter one
// parks in Go's netpoller, whose slower wake-up lets events gather: a
// held wait wakes for each event or two, and at 256 streams on one loop
// cost 18.9 µs per event against the park's 15.6 (BENCHMARKS.md).
func (l *loop) busy(now time.Time) bool {
	if now.Sub(l.window) >= busyWindow {
		l.wasBusy = l.windowEvents >= l.busyEvents
		l.napOK = windowNapOK(l.windowEvents, l.windowRequests)
		l.window, l.windowEvents, l.windowRequests = now, 0, 0
	}
	return l.wasBusy
}

const (
	// busyWindow and busyEvents: 16,000 events a second make a loop busy,
	// some 320 streams at an engine's pace of one event every 20 ms. At
	// 1024 streams over two loops each takes 23,000; at 256 on one, 12,000.
	busyWindow        = 10 * time.Millisecond
	defaultBusyEvents = 160
)

// wait returns the events ready, parking until there are some. An event
// that arrives after the netpoller's last report and before the park is
// not missed: RawConn.Read resets the readiness before it calls the
// function, so such an event wakes the park at once.
//
// The gate is armed for the park only, and disarmed after it: an armed
// gate passes each of the set's events on to Go's netpoller, whose idle
// processor's thread sleeps in its own epoll_wait and would wake for
// every event while the loop is busy with the others, for nothing (with
// the sockets out of the netpoller too, 16% less CPU per event at 1024
// streams; BENCHMARKS.md). Two epoll_ctl calls a park are far fewer than
// an event's wake-ups. An event that comes while the gate is armed wakes
// the netpoller even when the gate still holds an earlier, unread report
// of the set (the kernel wakes a set's watchers at each event it passes
// on), and one that came before the park is found by the poll RawConn.Read
// makes first.
func (l *loop) wait(events []syscall.EpollEvent) (int, error) {
	if l.hold && (len(l.streams) > 0 || len(l.parked) > 0) {
		if now := time.Now(); l.busy(now) {
			return l.heldWait(events, now) // one clock read for both
		}
	}
	// A busy loop finds events at once: it takes them without the
	// netpoller's bookkeeping (a deadline to move, a lock to take).
	if n, err := epollNow(l.epfd, events); n > 0 || err != nil {
		return n, err
	}
	// A wake-up from the set to the netpoller that the kernel lost
	// (Linux 5.5 had such a bug with nested epoll) would leave every
	// stream of the loop waiting: the park is bounded, and the set polled
	// again after it.
	if err := l.gate(syscall.EPOLLIN | syscall.EPOLLONESHOT); err != nil {
		return 0, err
	}
	_ = l.ep.SetReadDeadline(time.Now().Add(parkLimit))
	l.poll.events = events
	err := l.raw.Read(l.poll.fn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil // n is 0: the loop polls again
	}
	return l.poll.n, cmp.Or(err, l.gate(0), l.poll.err)
}

// heldWait waits for the set's events in epoll_wait itself, a raw call
// that keeps the loop's processor, for at most heldWaitLimit; this is
// how a loop busy with streams waits (busy).
//
// A park in Go's netpoller passes through the scheduler twice: the
// netpoller's one polling thread wakes, readies the loop and wakes a
// thread to run it; two loops parked there take turns on that one thread;
// and on a busy machine the loop then waits for a processor among the
// program's goroutines. At 1024 streams on two cores that cost added ITL
// p99 over HAProxy's, whose threads each wait in their own epoll_wait
// (BENCHMARKS.md, "Loops that hold their processor"). A held wait is
// HAProxy's: the kernel wakes the loop's thread itself, which has its
// processor still.
//
// So the processor is the loop's while it waits. The program gives it one
// of its own (Run holds only when GOMAXPROCS leaves the rest one at
// least). The loop yields it (runtime.Gosched) once every heldYield, so
// that the scheduler, which preempts a goroutine that ran 10 ms without
// rescheduling, never has to signal it; a goroutine its batch readied
// (a Done's callbacks, a parked client's next request) is taken from its
// processor's queue by another processor's thread meanwhile. Not at each
// wait: a yield is a thread switch more often than not (an idle
// processor's spinning thread takes the loop from the global queue, and
// the yielding thread sleeps): 3.5% of slotgate's CPU samples at 1024
// streams when made at each. A stop-the-world pause's signal interrupts
// the wait (EINTR: no events), and the loop is preempted at its next
// call.
//
// A loop that finds its set empty naps first, when its last window allows
// (nap_linux.go): the events of the next millisecond then take one
// wake-up, not one each.
func (l *loop) heldWait(events []syscall.EpollEvent, now time.Time) (int, error) {
	if now.Sub(l.yielded) >= heldYield {
		l.yielded = now
		runtime.Gosched()
	}
	l.heldWaits++
	if l.mayNap() {
		if n, err := epollNow(l.epfd, events); n > 0 || err != nil {
			return n, err
		}
		if err := l.nap(); err != nil {
			return 0, err
		}
	}
	n, err := rawio.EpollWaitFor(l.epfd, events, heldWaitLimit)
	if errors.Is(err, syscall.EINTR) {
		return 0, nil
	}
	return n, err
}

const (
	// heldWaitLimit bounds a held wait, in milliseconds, so that the loop
	// yields on time and closes idle parked clients on time.
	heldWaitLimit = 4
	// heldYield is how often a holding loop yields its processor.
	heldYield = 4 * time.Millisecond
)

// gate arms the gate with events (the set's readiness, once), or
// disarms it with none.
func (l *loop) gate(events uint32) error {
	gev := syscall.EpollEvent{Events: events, Fd: int32(l.epfd)}
	if err := rawio.EpollCtl(l.gatefd, syscall.EPOLL_CTL_MOD, l.epfd, &gev); err != nil {
		return fmt.Errorf("relay: epoll_ctl: %w", err)
	}
	return nil
}

// poller is the function a loop parks with and what it found, made once
// per loop: a closure made per wait would cost allocations per batch.
type poller struct {
	epfd   int
	events []syscall.EpollEvent
	n      int
	err    error
	fn     func(fd uintptr) bool
}

func newPoller(epfd int) *poller {
	p := &poller{epfd: epfd}
	p.fn = func(uintptr) bool {
		p.n, p.err = epollNow(p.epfd, p.events)
		return p.n > 0 || p.err != nil
	}
	return p
}

// epollNow takes the events ready in the set epfd without waiting; an
// interrupted call found none.
func epollNow(epfd int, events []syscall.EpollEvent) (int, error) {
	n, err := rawio.EpollWait(epfd, events)
	if errors.Is(err, syscall.EINTR) {
		return 0, nil
	}
	return n, err
}

// parkLimit bounds a loop's park in the netpoller.
const parkLimit = time.Second
