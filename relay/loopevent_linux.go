package relay

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// handle acts on one event. A panic in the stream's OnData or OnEnd
// ends that stream, cut, not the loop.
func (l *loop) handle(ev syscall.EpollEvent, ended []ending) (out []ending) {
	fd := int(ev.Fd)
	st := l.streams[fd]
	if st == nil || st.gen != ev.Pad {
		if w := l.watched[fd]; w != nil && w.gen == ev.Pad {
			l.watchEvent(w, ev.Events)
		} else if p := l.parked[fd]; p != nil && p.gen == ev.Pad {
			l.windowRequests++
			l.parkedEvent(p, ev.Events)
		}
		return ended // a watched or parked socket, or a stream that ended in this batch
	}
	defer l.cutOnPanic(st, ended, &out)
	return l.event(st, fd, ev, ended)
}

// cutOnPanic, deferred where a stream's OnData or OnEnd may run, ends
// the stream, cut, when it panicked: ended is what was ended before, and
// out is set to it with the stream added.
func (l *loop) cutOnPanic(st *stream, ended []ending, out *[]ending) {
	if v := recover(); v != nil {
		*out = l.end(st, Result{Err: fmt.Errorf("relay: panic in the stream's OnData or OnEnd: %v", v)}, ended)
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
	if len(st.out) > 0 || st.pending {
		// Read once the client took what was read before (or the batch
		// wrote its read: writeDeferred reads on); but an engine that
		// reset the connection (or whose socket failed) before the
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
	for st.engineReady && len(st.out) == 0 && !st.pending {
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
		k, err := st.feed(l.buf[:n])
		if err != nil {
			return l.end(st, Result{Err: err}, ended)
		}
		st.extra = st.extra || k < n
		if l.deferWrite(st, l.buf[:k]) {
			return ended // written with the batch's others (batch_linux.go)
		}
		before := len(ended)
		if ended = l.write(st, l.buf[:k], ended); len(ended) > before {
			return ended
		}
	}
	return ended
}

// feed passes p, the engine's next bytes, through st's parser, and tells
// OnEnd when they held the body's end, before any of them is written: a
// stream's parser is fed no more once it is done (the client is given the
// rest, then the stream ends).
func (st *stream) feed(p []byte) (int, error) {
	k, err := st.parser.feed(p, st.OnData)
	if err == nil && st.OnEnd != nil && st.parser.done() {
		st.OnEnd()
	}
	return k, err
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
		return l.writeThenRead(st, out, ended)
	}
	return l.readEngine(st, ended)
}

// writeThenRead gives p to the client and, once it took all of it, reads
// the engine again if it was ready meanwhile.
func (l *loop) writeThenRead(st *stream, p []byte, ended []ending) []ending {
	before := len(ended)
	if ended = l.write(st, p, ended); len(ended) > before || len(st.out) > 0 {
		return ended // ended, or the client still has more to take
	}
	st.out = nil // a stream between reads holds no buffer
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
	st.out, st.pending = nil, false
	return append(ended, ending{st, res})
}
