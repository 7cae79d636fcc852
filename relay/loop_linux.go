package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// Relay spreads streams over its loops: a loop fills before the next
// is given streams (pick).
type Relay struct {
	loops  []*loop
	next   atomic.Uint32 // spreads watches and waiting clients over the loops
	added  atomic.Uint64
	parked atomic.Int64
}

// New returns a relay of n loops, each with its epoll instance; Run runs
// them. n <= 0 picks one loop per four processors (GOMAXPROCS), at least
// one: a loop carries some 60,000 events a second on a core, more than
// one engine's streams. More loops shorten the inter-token latency tail
// while the first is busy but not saturated (at 1024 streams on two
// cores, two loops took added ITL p99 under HAProxy's at about 5% more
// CPU per event), and cost more once the machine is saturated (at 4096,
// 1.5 times the CPU per event of one loop, and a longer tail):
// BENCHMARKS.md, "Loops that hold their processor". A light load stays
// on the first loop (pick).
//
// A busy loop with streams open or clients kept waits holding its
// processor (heldWait): a program runs a relay on GOMAXPROCS raised by
// Loops, so that the held ones are processors of their own and not the
// rest of the program's.
func New(n int) (*Relay, error) {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/4)
	}
	r := &Relay{}
	for range n {
		l, err := newLoop(&r.added)
		if err != nil {
			r.closeLoops()
			return nil, err
		}
		l.parkedN = &r.parked
		r.loops = append(r.loops, l)
	}
	return r, nil
}

func (r *Relay) closeLoops() {
	for _, l := range r.loops {
		l.close()
	}
}

// Run runs every loop until ctx ends, then ends the streams still open
// (Done with ErrShutdown) and frees the loops. It returns when all have
// stopped.
//
// Its loops hold their processors while they wait for streams' events
// only when GOMAXPROCS, as Run finds it, leaves the rest of the program
// at least one processor besides them; otherwise they park in Go's
// netpoller, streams or not.
func (r *Relay) Run(ctx context.Context) {
	hold := runtime.GOMAXPROCS(0) > len(r.loops)
	var wg sync.WaitGroup
	for _, l := range r.loops {
		l.hold = hold
		wg.Go(func() { l.run(ctx) })
	}
	wg.Wait()
}

// Loops is the number of the relay's loops: the processors its held
// waits may take (see New).
func (r *Relay) Loops() int { return len(r.loops) }

// Open is the number of streams being relayed.
func (r *Relay) Open() int {
	n := int64(0)
	for _, l := range r.loops {
		n += l.open.Load()
	}
	return int(n)
}

// Added is the number of streams added since New.
func (r *Relay) Added() uint64 { return r.added.Load() }

// Parked is the number of clients kept after their stream ended, until
// their next request (Stream.Park).
func (r *Relay) Parked() int { return int(r.parked.Load()) }

// Add hands s to a loop, having taken its sockets out of Go's netpoller
// if it has Movers. It fails, without calling Done, when a connection has
// no socket to relay on, a socket cannot be moved out (both are then as
// they were), or once the relay stopped; from its success on, Done will
// be called once.
func (r *Relay) Add(s *Stream) error {
	efd, err := fdOf(s.Engine)
	if err != nil {
		return err
	}
	cfd, err := fdOf(s.Client)
	if err != nil {
		return err
	}
	st := &stream{Stream: s, efd: efd, cfd: cfd}
	if err := st.moveOut(); err != nil {
		return err
	}
	l := r.pick()
	if err := l.add(st); err != nil {
		st.moveInUsed(Result{Ended: true, EngineReusable: true}) // never carried: both as they were
		return err
	}
	return nil
}

// pick chooses the loop for a new stream: the first with fewer than
// spillStreams open, so that a light load stays on one loop (each more
// loop a stream is spread over wakes for fewer events at a time: up to
// a quarter more CPU per event at 256 streams with two loops than with
// one); past that, the one with the fewest.
func (r *Relay) pick() *loop {
	best := r.loops[0]
	for _, l := range r.loops {
		n := l.open.Load()
		if n < spillStreams {
			return l
		}
		if n < best.open.Load() {
			best = l
		}
	}
	return best
}

// spillStreams is how many streams a loop takes before the next loop is
// given new ones: some 19,000 events a second at an engine's pace of one a
// stream every 20 ms, a third of a core.
const spillStreams = 384

// Usable reports, with an error saying why not, whether c has a socket
// the relay can carry: a caller checks before it commits to the relay
// (say, by writing an answer's head).
func Usable(c net.Conn) error {
	_, err := fdOf(c)
	return err
}

// fdOf returns c's socket. The descriptor stays c's: it is valid while c
// is open, and the relay never closes it.
func fdOf(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, ErrUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	fd, flags := -1, uintptr(0)
	var errno syscall.Errno
	if err := rc.Control(func(s uintptr) {
		fd = int(s)
		flags, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, s, syscall.F_GETFL, 0)
	}); err != nil {
		return 0, fmt.Errorf("relay: %w", err)
	}
	if errno != 0 {
		return 0, fmt.Errorf("relay: fcntl: %w", errno)
	}
	if flags&syscall.O_NONBLOCK == 0 {
		// The loop's raw calls must never block (see the package's doc).
		return 0, fmt.Errorf("%w: a blocking socket", ErrUnsupported)
	}
	return fd, nil
}

// stream is a Stream as its loop keeps it.
type stream struct {
	*Stream
	gen      int32 // told apart from an earlier stream on a reused descriptor
	efd, cfd int
	parser   chunkParser
	out      []byte // read from the engine, not yet taken by the client
	// engineReady is set by an engine event and cleared by a read that
	// drained the socket: the engine may have something to read.
	engineReady bool
	// engineEnded is set once the engine hung up: reads go on to the end.
	engineEnded bool
	sent        int64
	first       time.Time
	extra       bool // the engine sent bytes past the body's end
	moved       bool // efd and cfd are the relay's, out of Go's netpoller
	l           *loop
}

// loop is one epoll instance and the goroutine that waits on it.
type loop struct {
	epfd int // the set: the streams' sockets, the watches, the wake pipe
	// gatefd is an epoll instance that holds the set alone, armed (once)
	// only while the loop parks: Go's netpoller watches the gate, not
	// the set, so that the set's events reach the netpoller's thread
	// only when the loop waits for them (wait).
	gatefd       int
	ep           *os.File        // gatefd, watched by Go's netpoller
	raw          syscall.RawConn // ep's, to park on
	poll         *poller
	wakeR, wakeW int          // a pipe: a byte on it wakes the loop (a stream to take, the shutdown)
	open         atomic.Int64 // the loop's streams, from add to end (Relay.Open sums them)
	added        *atomic.Uint64
	// mu guards the streams handed over by Add and not yet taken by the
	// loop, and stopped. Nothing else is shared: the table and the epoll
	// set are the loop's own, so that a stream's start never waits for a
	// batch of events to be handled.
	mu       sync.Mutex
	incoming []*stream
	ops      []func() // watches to begin or end (Watch, Stop)
	stopped  bool
	closed   bool             // the descriptors are closed
	streams  map[int]*stream  // by both of their descriptors; the loop's
	watched  map[int]*Watched // by descriptor; the loop's
	// parked are the clients kept after their answers (park_linux.go),
	// by descriptor; idleOrder those with an idle time, in the order
	// parked; shutting refuses new ones as the loop stops. The loop's.
	parked    map[int]*parkedConn
	idleOrder []*parkedConn
	shutting  bool
	parkedN   *atomic.Int64 // the relay's count of parked clients (Parked)
	gen       int32
	buf       []byte // the loop's read buffer: one read at a time
	out       []byte // a waiting client's answer (wait_linux.go), reused
	// hold lets the loop wait holding its processor while busy with
	// streams or kept clients (heldWait); set by Run before the loop
	// starts. heldWaits counts those waits, for the tests.
	hold      bool
	heldWaits int
	yielded   time.Time // when a holding loop last yielded
	// window is when the loop's current window of busyWindow began, and
	// windowEvents the events it took since; wasBusy is what the last
	// full window said; busyEvents is the events that make a window busy
	// (tests set 0: always).
	window       time.Time
	windowEvents int
	wasBusy      bool
	busyEvents   int
}

// busy reports whether the loop took busyEvents or more events in its
// last full window of busyWindow. A busy loop waits held; a lighter one
// parks in Go's netpoller, whose slower wake-up lets events gather: a
// held wait wakes for each event or two, and at 256 streams on one loop
// cost 18.9 µs per event against the park's 15.6 (BENCHMARKS.md).
func (l *loop) busy(now time.Time) bool {
	if now.Sub(l.window) >= busyWindow {
		l.wasBusy = l.windowEvents >= l.busyEvents
		l.window, l.windowEvents = now, 0
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

// readSize is how much one read of an engine socket takes: a stream's
// events are a few hundred bytes, a burst after a stall more.
const readSize = 64 << 10

func newLoop(added *atomic.Uint64) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("relay: epoll_create1: %w", err)
	}
	gatefd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("relay: epoll_create1: %w", err)
	}
	gev := syscall.EpollEvent{Fd: int32(epfd)} // not armed: wait arms it to park
	if err := syscall.EpollCtl(gatefd, syscall.EPOLL_CTL_ADD, epfd, &gev); err != nil {
		_ = syscall.Close(epfd)
		_ = syscall.Close(gatefd)
		return nil, fmt.Errorf("relay: epoll_ctl: %w", err)
	}
	// Non-blocking, so that os.NewFile hands it to Go's netpoller.
	if err := syscall.SetNonblock(gatefd, true); err != nil {
		_ = syscall.Close(epfd)
		_ = syscall.Close(gatefd)
		return nil, fmt.Errorf("relay: epoll fd: %w", err)
	}
	l := &loop{epfd: epfd, gatefd: gatefd, ep: os.NewFile(uintptr(gatefd), "relay-epoll-gate"), poll: newPoller(epfd), added: added,
		busyEvents: defaultBusyEvents, streams: make(map[int]*stream), watched: make(map[int]*Watched), parked: make(map[int]*parkedConn), buf: make([]byte, readSize)}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		_ = l.ep.Close()
		return nil, fmt.Errorf("relay: pipe2: %w", err)
	}
	l.wakeR, l.wakeW = p[0], p[1]
	if l.raw, err = l.ep.SyscallConn(); err != nil {
		l.close()
		return nil, fmt.Errorf("relay: epoll fd: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakeR)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakeR, &ev); err != nil {
		l.close()
		return nil, fmt.Errorf("relay: epoll_ctl: %w", err)
	}
	return l, nil
}

// close frees the loop's descriptors. A wake that comes later (Run's
// context ending as the loop stops) finds closed set and writes nothing,
// rather than a byte into whatever reused the pipe's number.
func (l *loop) close() {
	l.mu.Lock()
	l.closed = true
	_ = syscall.Close(l.wakeR)
	_ = syscall.Close(l.wakeW)
	l.mu.Unlock()
	_ = l.ep.Close() // the gate's fd
	_ = syscall.Close(l.epfd)
}

// wake makes the loop's next wait return at once: a byte on its pipe (a
// full pipe is already a wake).
func (l *loop) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakeLocked()
}

func (l *loop) wakeLocked() {
	if !l.closed {
		_, _ = syscall.Write(l.wakeW, []byte{1})
	}
}

// add hands st to the loop, which registers it when it wakes
// (takeIncoming).
func (l *loop) add(st *stream) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return ErrShutdown
	}
	l.open.Add(1)
	l.added.Add(1)
	l.incoming = append(l.incoming, st)
	l.wakeForFirstLocked()
	l.mu.Unlock()
	return nil
}

// wakeForFirstLocked wakes the loop for what was just handed over, if it
// is the first thing waiting: else a wake is on its way.
func (l *loop) wakeForFirstLocked() {
	if len(l.incoming)+len(l.ops) == 1 {
		l.wakeLocked()
	}
}

// queue has the loop run f when it wakes, in the order queued, after the
// streams added before; it fails once the loop stopped.
func (l *loop) queue(f func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return ErrShutdown
	}
	l.queueLocked(f)
	return nil
}

func (l *loop) queueLocked(f func()) {
	l.ops = append(l.ops, f)
	l.wakeForFirstLocked()
}

// takeIncoming registers the streams handed over since the last call:
// each starts at once (register), the body's first bytes framed and given
// to the client, the engine read.
func (l *loop) takeIncoming(ended []ending) []ending {
	var b [64]byte
	for {
		if n, _ := syscall.Read(l.wakeR, b[:]); n < len(b) {
			break // drained (the pipe is level-triggered in the set)
		}
	}
	l.mu.Lock()
	incoming, ops := l.incoming, l.ops
	l.incoming, l.ops = nil, nil
	l.mu.Unlock()
	for _, st := range incoming {
		ended = l.register(st, ended)
	}
	for _, f := range ops {
		f()
	}
	return ended
}

func (l *loop) register(st *stream, ended []ending) (out []ending) {
	l.gen++
	st.gen, st.l = l.gen, l
	l.streams[st.efd], l.streams[st.cfd] = st, st
	defer l.cutOnPanic(st, ended, &out)
	k, err := st.parser.feed(st.Pending, st.OnData)
	st.extra = k < len(st.Pending)
	st.out = st.Pending[:k:k] // the caller's, given with the stream
	st.Pending = nil
	if err != nil {
		return l.end(st, Result{Err: err}, ended)
	}
	if err := l.watch(st.cfd, st, clientEvents); err != nil {
		return l.end(st, Result{Err: err}, ended)
	}
	if err := l.watch(st.efd, st, engineEvents); err != nil {
		return l.end(st, Result{Err: err}, ended)
	}
	// Start at once rather than at the sockets' first events, a batch
	// later on a busy loop: the client takes what came with the head, and
	// the engine is read in case the first event has come since (a read
	// that finds nothing costs one call; the initial events, when they
	// come, find nothing to do).
	st.engineReady = true
	return l.flush(st, ended)
}

// A stream's sockets are registered once, edge-triggered: an event says
// that something changed (data came, room was made, the peer hung up),
// and the loop remembers what it has not acted on yet (stream.engineReady).
// So nothing changes the set while the stream lives, and a socket that
// stays ready is not reported again and again. The initial events (a
// socket already writable or readable when added) are reported too.
const (
	clientEvents = syscall.EPOLLOUT | syscall.EPOLLRDHUP | edgeTriggered
	engineEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | edgeTriggered
	// edgeTriggered is EPOLLET (1<<31), which the syscall package
	// declares negative.
	edgeTriggered = 1 << 31
)

// watch adds fd's events to the set, tagged with st's generation.
func (l *loop) watch(fd int, st *stream, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd), Pad: st.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("relay: epoll_ctl: %w", err)
	}
	return nil
}

// run waits for events until ctx ends. Busy with streams, the loop waits
// in epoll_wait itself, holding its processor (heldWait). Otherwise (a
// light load, only watches and parked clients, or nothing) its set is
// watched by Go's netpoller through its gate (an epoll set is readable
// while it has events ready): the goroutine parks there, like any
// goroutine waiting on a socket, and each wake takes what is ready with a
// wait that does not block; an idle relay holds no processor. A blocking
// epoll_wait made through the syscall package would be neither: every
// wake would pay the scheduler's hand-off of the thread's processor and
// its return (BENCHMARKS.md, "loops that block in epoll_wait").
func (l *loop) run(ctx context.Context) {
	// The context's end wakes the loop, on a goroutine of its own, which
	// the loop waits for: once run returns, nothing of it runs.
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woken)
		l.wake()
	})
	defer func() {
		if !stop() {
			<-woken
		}
	}()
	events := make([]syscall.EpollEvent, 256)
	var ended []ending
	for ctx.Err() == nil {
		n, err := l.wait(events)
		if err != nil {
			break // the set is gone: nothing more can be waited on
		}
		l.windowEvents += n
		for _, ev := range events[:n] {
			if int(ev.Fd) == l.wakeR {
				ended = l.takeIncoming(ended)
				continue
			}
			ended = l.handle(ev, ended)
		}
		ended = callDone(ended)
		l.closeIdle()
	}
	l.shutdown()
}

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
func (l *loop) heldWait(events []syscall.EpollEvent, now time.Time) (int, error) {
	if now.Sub(l.yielded) >= heldYield {
		l.yielded = now
		runtime.Gosched()
	}
	l.heldWaits++
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

// shutdown ends every stream still open and frees the loop.
func (l *loop) shutdown() {
	l.closeParked()
	l.mu.Lock()
	l.stopped = true
	incoming, ops := l.incoming, l.ops
	l.incoming, l.ops = nil, nil
	l.mu.Unlock()
	for _, f := range ops {
		f() // the watches' (a Watch begun, a Stop's table entry)
	}
	var ended []ending
	for fd, st := range l.streams {
		if fd == st.efd {
			ended = l.end(st, Result{Err: ErrShutdown}, ended)
		}
	}
	for _, st := range incoming {
		l.open.Add(-1)
		ended = append(ended, ending{st, Result{Err: ErrShutdown}})
	}
	callDone(ended)
	l.close()
}

// ending is a stream that ended in a batch, told once the batch is
// handled (Done may take time: a log line, a release).
type ending struct {
	st  *stream
	res Result
}

func callDone(ended []ending) []ending {
	for _, e := range ended {
		e.st.done(e.res)
	}
	clear(ended)
	return ended[:0]
}

// done gives moved sockets back (moveInUsed: the ones of use still), or
// parks the client's (Stream.Park), and calls Done. A panic in Done is
// the stream's, not the loop's: its sockets are closed (Done may not have
// got to them), and the loop goes on with its other streams.
func (st *stream) done(res Result) {
	if st.moved {
		res.Parked = res.Ended && !res.ClientGone && st.Park != nil && st.l != nil && st.l.park(st)
		if !st.moveInUsed(res) {
			res.EngineReusable = false
		}
	}
	defer func() {
		if v := recover(); v != nil {
			_ = st.Engine.Close()
			_ = st.Client.Close()
		}
	}()
	st.Done(res)
}

// handle acts on one event. A panic in the stream's OnData ends that
// stream, cut, not the loop.
func (l *loop) handle(ev syscall.EpollEvent, ended []ending) (out []ending) {
	fd := int(ev.Fd)
	st := l.streams[fd]
	if st == nil || st.gen != ev.Pad {
		if w := l.watched[fd]; w != nil && w.gen == ev.Pad {
			l.watchEvent(w, ev.Events)
		} else if p := l.parked[fd]; p != nil && p.gen == ev.Pad {
			l.parkedEvent(p, ev.Events)
		}
		return ended // a watched or parked socket, or a stream that ended in this batch
	}
	defer l.cutOnPanic(st, ended, &out)
	return l.event(st, fd, ev, ended)
}

// cutOnPanic, deferred where a stream's OnData may run, ends the stream,
// cut, when it panicked: ended is what was ended before, and out is set to
// it with the stream added.
func (l *loop) cutOnPanic(st *stream, ended []ending, out *[]ending) {
	if v := recover(); v != nil {
		*out = l.end(st, Result{Err: fmt.Errorf("relay: panic in the stream's OnData: %v", v)}, ended)
	}
}

func (l *loop) event(st *stream, fd int, ev syscall.EpollEvent, ended []ending) []ending {
	if fd == st.cfd {
		if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			return l.end(st, Result{ClientGone: true, Err: errClientClosed}, ended)
		}
		return l.flush(st, ended)
	}
	st.engineReady = true // data, or a hang-up or an error a read will tell
	if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
		// The engine's end is readable after its data, with no edge of
		// its own if it came with them: read on until a read says so.
		st.engineEnded = true
	}
	if len(st.out) > 0 {
		// Read once the client took what was read before; but an engine
		// that reset the connection (or whose socket failed) before the
		// answer's end has cut it: no need to wait for a slow client to
		// say so, and the slot goes back now.
		if ev.Events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !st.parser.done() {
			return l.end(st, Result{Err: errEngineEOF}, ended)
		}
		return ended
	}
	return l.readEngine(st, ended)
}

var (
	errClientClosed = errors.New("relay: the client closed its connection")
	errEngineEOF    = errors.New("relay: the engine closed the connection before the answer's end")
)

// readEngine reads the engine's socket and passes what came to the
// client, until the socket is drained or the client stops taking. A read
// shorter than the buffer drained the socket: whatever comes after it is
// a new edge, so no read is spent to find the socket empty.
func (l *loop) readEngine(st *stream, ended []ending) []ending {
	for st.engineReady && len(st.out) == 0 {
		n, err := rawio.Read(st.efd, l.buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			st.engineReady = false
			return ended
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return l.end(st, Result{Err: fmt.Errorf("relay: read engine: %w", err)}, ended)
		case n == 0:
			return l.end(st, Result{Err: errEngineEOF}, ended)
		}
		st.engineReady = n == len(l.buf) || st.engineEnded
		k, err := st.parser.feed(l.buf[:n], st.OnData)
		if err != nil {
			return l.end(st, Result{Err: err}, ended)
		}
		st.extra = st.extra || k < n
		before := len(ended)
		if ended = l.write(st, l.buf[:k], ended); len(ended) > before {
			return ended
		}
	}
	return ended
}

// write gives p to the client; what it does not take waits in st.out,
// and the engine is not read until it has.
func (l *loop) write(st *stream, p []byte, ended []ending) []ending {
	n, err := writeSome(st.cfd, p)
	if n > 0 {
		if st.sent == 0 {
			st.first = time.Now()
		}
		st.sent += int64(n)
	}
	if err != nil {
		return l.end(st, Result{ClientGone: true, Err: fmt.Errorf("relay: write client: %w", err)}, ended)
	}
	if n < len(p) {
		st.out = append(st.out[:0], p[n:]...)
		return ended // the client's next EPOLLOUT edge flushes it
	}
	if st.parser.done() {
		return l.end(st, Result{Ended: true}, ended)
	}
	return ended
}

// flush gives the client what it had not taken; once it has, the engine
// is read again if it was ready meanwhile. A stream starts here, as
// register watches its sockets, with the body's first bytes (if any) to
// take.
func (l *loop) flush(st *stream, ended []ending) []ending {
	if len(st.out) > 0 {
		out := st.out
		st.out = st.out[:0]
		before := len(ended)
		ended = l.write(st, out, ended)
		if len(ended) > before || len(st.out) > 0 {
			return ended // ended, or the client still has more to take
		}
		st.out = nil // a stream between reads holds no buffer
	}
	return l.readEngine(st, ended)
}

// writeSome writes p once, retried on EINTR; a full socket (EAGAIN) is
// not an error: it wrote 0.
func writeSome(fd int, p []byte) (int, error) {
	for {
		n, err := rawio.Write(fd, p)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, nil
		}
		return 0, err
	}
}

// end takes st out of the set and the table and queues its Done.
func (l *loop) end(st *stream, res Result, ended []ending) []ending {
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, st.efd, nil)
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, st.cfd, nil)
	delete(l.streams, st.efd)
	delete(l.streams, st.cfd)
	l.open.Add(-1)
	res.Sent, res.FirstWrite = st.sent, st.first
	res.EngineReusable = res.Ended && !st.extra
	st.out = nil
	return append(ended, ending{st, res})
}
