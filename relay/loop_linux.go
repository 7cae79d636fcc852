package relay

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

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
	// pending is set while a read of the engine waits in the loop's batch
	// to be written (batch_linux.go): the engine is not read again meanwhile.
	pending bool
	moved   bool // efd and cfd are the relay's, out of Go's netpoller
	l       *loop
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
	waiting      atomic.Int64 // the loop's waiting clients (Wait), counted from parked to gone, for pickWaiting (a burst handed over before the loop parks it may pass spillStreams)
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
	batch     batch  // the reads of a batch of events, written at its end
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
	// windowRequests counts the window's events on parked clients; napOK
	// is what the last full window said of naps (nap_linux.go). napfd is
	// the nap set, napMillis a nap's length (tests change it), naps counts
	// them, for the tests. peers are the relay's loops, this one included.
	windowRequests int
	peers          []*loop
	napOK          bool
	napfd          int
	napMillis      int
	napEvent       [1]syscall.EpollEvent
	naps           int
}

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
		busyEvents: defaultBusyEvents, napfd: -1, napMillis: napMillis, streams: make(map[int]*stream), watched: make(map[int]*Watched), parked: make(map[int]*parkedConn), buf: make([]byte, readSize), batch: batch{bytes: make([]byte, 0, batchSize)}}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		_ = l.ep.Close()
		return nil, fmt.Errorf("relay: pipe2: %w", err)
	}
	l.wakeR, l.wakeW = p[0], p[1]
	if l.napfd, err = newNapSet(l.wakeR); err != nil {
		l.close()
		return nil, err
	}
	if l.raw, err = l.ep.SyscallConn(); err != nil {
		l.close()
		return nil, fmt.Errorf("relay: epoll fd: %w", err)
	}
	if err := watchWake(epfd, l.wakeR); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// watchWake adds the wake pipe's read end to the set epfd, level-triggered:
// the set stays readable until takeIncoming drains the pipe.
func watchWake(epfd, wakeR int) error {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(wakeR)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, wakeR, &ev); err != nil {
		return fmt.Errorf("relay: epoll_ctl: %w", err)
	}
	return nil
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
	if l.napfd >= 0 {
		_ = syscall.Close(l.napfd)
	}
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
	k, err := st.feed(st.Pending)
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
//
// The context's end is seen at the next wake: Relay.Run wakes the loop
// once it has ended (wake), from its own goroutine, which then waits for
// the loop. No goroutine of the loop's own waits for the end: one that
// woke the loop and signalled it had would still be on its way out as run
// returned.
func (l *loop) run(ctx context.Context) {
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
		ended = l.writeBatch(ended)
		ended = callDone(ended)
		l.closeIdle()
	}
	l.shutdown()
}

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
