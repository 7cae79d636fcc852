package relay

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// Relay spreads streams over its loops: a loop fills before the next
// is given streams (pick).
type Relay struct {
	loops  []*loop
	next   atomic.Uint32 // spreads watches over the loops
	added  atomic.Uint64
	parked atomic.Int64
}

// New returns a relay of n loops, each with its epoll instance; Run runs
// them. n <= 0 picks autoLoops(GOMAXPROCS). A light load stays on the
// first loop (pick).
//
// A busy loop with streams open or clients kept waits holding its
// processor (heldWait): a program runs a relay on GOMAXPROCS raised by
// Loops, so that the held ones are processors of their own and not the
// rest of the program's.
func New(n int) (*Relay, error) {
	if n <= 0 {
		n = autoLoops(runtime.GOMAXPROCS(0))
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
	for _, l := range r.loops {
		l.peers = r.loops // a loop naps while its peers carry streams too (nap_linux.go)
	}
	return r, nil
}

// autoLoops is the loops a relay runs on procs processors when not told:
// two from two processors, one per four processors from twelve, one on
// one. A loop carries some 60,000 events a second on a core, more than
// one engine's streams, but one thread that carries every stream is
// preempted more often than either of two half-busy ones: on two shared
// cores at 1024 streams, one loop's added ITL p99 sat 1.4 ms over
// HAProxy's two threads' over 194 rounds, where two loops, with the
// collector at GOGC=200 (command's collectorPace), met HAProxy's CPU per
// event, TTFT p99 and ITL p99. Two cost more once the machine is
// saturated (at 4096 streams, 1.3-1.6 times one loop's CPU per event):
// BENCHMARKS.md, "Two loops by default, at GOGC=200".
func autoLoops(procs int) int {
	return max(min(procs, 2), procs/4)
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
	<-ctx.Done()
	for _, l := range r.loops {
		l.wake() // a loop that stopped already ignores it (closed)
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
	return r.fillFirst(func(l *loop) int64 { return l.open.Load() })
}

// pickWaiting chooses the loop for a waiting client the way pick does
// for a stream, by the clients each loop keeps waiting: a storm's
// refusals answered on one loop cost less than spread over two (on two
// cores, 8.4 against 9.2 µs a refusal under wrk, 11.6 against 15.2 under
// the Go client; BENCHMARKS.md, "Two loops by default, tried and
// undone"), until it keeps spillStreams of them.
func (r *Relay) pickWaiting() *loop {
	return r.fillFirst(func(l *loop) int64 { return l.waiting.Load() })
}

// fillFirst returns the first loop whose load is under spillStreams, or
// else the one with the least.
func (r *Relay) fillFirst(load func(*loop) int64) *loop {
	best, least := r.loops[0], load(r.loops[0])
	for _, l := range r.loops {
		n := load(l)
		if n < spillStreams {
			return l
		}
		if n < least {
			best, least = l, n
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
