package relay

import (
	"net"
	"sync/atomic"
	"syscall"
)

// A Watched is a connection a loop watches for its peer's hang-up while
// its owner holds it idle (a request that waits): no goroutine waits on
// it. Bytes that come do not end the watch: only a close, a reset or an
// error does.
type Watched struct {
	l    *loop
	fd   int
	gen  int32
	gone func()
	// state is watching, then fired (the loop saw the hang-up and took
	// the socket out of its set) or stopping (Stop asked the loop to).
	state   atomic.Int32
	stopped chan struct{} // closed by the loop once a Stop is done
}

const (
	watching int32 = iota
	fired
	stopping
)

// Watch has a loop watch c's socket: gone is called once, on a goroutine
// of its own, if c's peer hangs up before Stop. It fails, calling
// nothing, when c has no socket or the relay has stopped.
func (r *Relay) Watch(c net.Conn, gone func()) (*Watched, error) {
	fd, err := fdOf(c)
	if err != nil {
		return nil, err
	}
	l := r.loops[int(r.next.Add(1))%len(r.loops)]
	w := &Watched{l: l, fd: fd, gone: gone, stopped: make(chan struct{})}
	return w, l.queue(func() { l.watchConn(w) })
}

// Stop ends the watch: once it returns, gone is not called (unless it
// was already) and the socket is out of the loop's set. It reports
// whether the peer hung up (gone was called). Call it once.
func (w *Watched) Stop() bool {
	if !w.state.CompareAndSwap(watching, stopping) {
		return true // fired: the loop took the socket out first
	}
	if w.l.queue(func() { w.l.unwatch(w) }) != nil {
		return false // the loop stopped: its set is gone
	}
	<-w.stopped
	return false
}

// watchConn adds w's socket to the set, on the loop.
func (l *loop) watchConn(w *Watched) {
	l.gen++
	w.gen = l.gen
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | edgeTriggered, Fd: int32(w.fd), Pad: w.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, w.fd, &ev); err != nil {
		// No watch: say so at once, as a hang-up would (the owner then
		// looks at the socket itself).
		l.hungUp(w)
		return
	}
	l.watched[w.fd] = w
}

// watchEvent acts on an event of a watched socket: a hang-up fires it.
func (l *loop) watchEvent(w *Watched, events uint32) {
	if events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		return
	}
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	delete(l.watched, w.fd)
	l.hungUp(w)
}

// hungUp fires w, whose socket is out of the set, unless it is stopping.
func (l *loop) hungUp(w *Watched) {
	if w.state.CompareAndSwap(watching, fired) {
		go w.gone() // the owner's work, off the loop
	}
}

// unwatch takes w's socket out of the set, on the loop, and tells Stop.
func (l *loop) unwatch(w *Watched) {
	if l.watched[w.fd] == w {
		_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
		delete(l.watched, w.fd)
	}
	close(w.stopped)
}
