package relay

import (
	"net"
	"sync"
	"syscall"
)

// A Watched is a connection a loop watches for its peer's hang-up while
// its owner holds it idle (a request that waits): no goroutine waits on
// it. Bytes that come do not end the watch: only a close, a reset or an
// error does.
//
// Stop does not wait for the loop (which may be parked, and slow to wake
// on a busy machine): it takes the socket out of the set itself. Both the
// loop and Stop touch the descriptor only under the watch's lock and
// while its state is watching, so neither ever acts on a descriptor the
// owner closed (and the system gave to another socket) after Stop.
type Watched struct {
	l    *loop
	fd   int
	gen  int32 // set on the loop, before the socket joins the set
	gone func()

	mu    sync.Mutex
	state int // watching, then fired (the loop saw the hang-up) or stopped
}

const (
	watching = iota
	fired
	stopped
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
	w := &Watched{l: l, fd: fd, gone: gone}
	return w, l.queue(func() { l.watchConn(w) })
}

// Stop ends the watch: once it returns, gone is not called (unless it
// was already, or is being) and the socket is out of the loop's set. It
// reports whether the peer hung up first (gone was called). Call it once.
func (w *Watched) Stop() bool {
	w.mu.Lock()
	if w.state == fired {
		w.mu.Unlock()
		return true
	}
	w.state = stopped
	w.mu.Unlock()
	w.l.drop(w)
	return false
}

// drop takes w's socket out of the set, on Stop's goroutine, and has the
// loop forget it. The set is only changed while the loop runs, so never
// after its descriptor was closed. A socket not in the set yet (the loop
// has not taken it) is not found, and the loop will not add it.
func (l *loop) drop(w *Watched) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	l.queueLocked(func() { l.forget(w) })
}

// watchConn adds w's socket to the set, on the loop, unless Stop came
// first.
func (l *loop) watchConn(w *Watched) {
	l.gen++
	w.gen = l.gen
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != watching {
		return
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | edgeTriggered, Fd: int32(w.fd), Pad: w.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, w.fd, &ev); err != nil {
		// No room in the set (ENOSPC, ENOMEM): the socket goes
		// unwatched, and Stop reports no hang-up; its owner looks at the
		// socket itself then.
		return
	}
	l.watched[w.fd] = w
}

// watchEvent acts on an event of a watched socket: a hang-up fires it,
// unless Stop came first.
func (l *loop) watchEvent(w *Watched, events uint32) {
	if events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		return
	}
	w.mu.Lock()
	fire := w.state == watching
	if fire {
		w.state = fired
		_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	}
	w.mu.Unlock()
	if fire {
		l.forget(w)
		go w.gone() // the owner's work, off the loop
	}
}

// forget drops w from the loop's table; the socket left the set already.
func (l *loop) forget(w *Watched) {
	if l.watched[w.fd] == w {
		delete(l.watched, w.fd)
	}
}
