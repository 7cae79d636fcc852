package relay

import (
	"net"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// A parked client is a stream's client socket kept in its loop after its
// answer ended (Stream.Park), until the client sends its next request
// (the socket goes back into its connection, for Park), hangs up or
// stays idle too long (the loop closes it). Its descriptor is the
// relay's, as while the stream ran, and in no set but the loop's.
type parkedConn struct {
	fd     int
	gen    int32 // told apart from a later use of the descriptor's number
	mover  Mover
	resume func(net.Conn)
	until  time.Time // when it is closed as idle; zero: never
	// A waiting client's (Relay.Wait, wait_linux.go): answer takes its
	// requests, resumeAhead gets back what answer leaves, pending is an
	// answer's rest the socket did not take, and renewed the idle time
	// its last answer gave it, which until takes once passed (closeIdle).
	answer      func(req, out []byte) ([]byte, bool)
	resumeAhead func(c net.Conn, ahead []byte)
	pending     []byte
	idle        time.Duration
	renewed     time.Time
}

// parkedEvents are a parked client's: its next bytes, or its hang-up.
const parkedEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | edgeTriggered

// park keeps st's client socket (moved out, its answer ended) in the set,
// watched for the client's next bytes or its hang-up, and reports whether
// it did; when it did not, the socket is st's still.
func (l *loop) park(st *stream) bool {
	if l.shutting {
		return false
	}
	l.gen++
	p := &parkedConn{fd: st.cfd, gen: l.gen, mover: st.ClientMover, resume: st.Park}
	ev := syscall.EpollEvent{Events: parkedEvents, Fd: int32(p.fd), Pad: p.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, p.fd, &ev); err != nil {
		return false
	}
	l.parked[p.fd] = p
	l.parkedN.Add(1)
	if st.ParkIdle > 0 {
		p.until = time.Now().Add(st.ParkIdle)
		l.idleOrder = append(l.idleOrder, p)
	}
	return true
}

// parkedEvent acts on a parked client's event: bytes (a request) move the
// socket back into its connection for Park; a hang-up closes it. A look
// at the socket tells the two apart: a client may send its request and
// close its side at once, which is a request. A waiting client's events
// are waiterEvent's.
func (l *loop) parkedEvent(p *parkedConn, events uint32) {
	if p.answer != nil {
		l.waiterEvent(p, events)
		return
	}
	l.unpark(p)
	if rawio.PeerClosed(p.fd) {
		_ = syscall.Close(p.fd)
		return
	}
	c, err := p.mover.MoveIn(p.fd) // closes the socket on failure
	if err != nil {
		return
	}
	p.resume(c)
}

// unpark takes p out of the set and the table; its descriptor is the
// caller's to close or move back.
func (l *loop) unpark(p *parkedConn) {
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, p.fd, nil)
	delete(l.parked, p.fd)
	l.parkedN.Add(-1)
	if p.answer != nil {
		l.waiting.Add(-1)
	}
}

// closeIdle closes the parked clients idle past their time. It runs after
// each batch and each park of the loop, which is bounded (parkLimit): an
// idle client is closed within a second of its time. idleOrder is in the
// order they were parked, which is the order of their times when every
// stream has the same ParkIdle (the proxy's streams have the server's
// idle timeout); one parked with a shorter time behind a longer one waits
// for it, closed late rather than early. A waiting client whose answers
// renewed its time goes to the back with it when its first time passes.
func (l *loop) closeIdle() {
	if len(l.idleOrder) == 0 {
		return
	}
	now := time.Now()
	for len(l.idleOrder) > 0 {
		p := l.idleOrder[0]
		if l.parked[p.fd] == p && now.Before(p.until) {
			break
		}
		l.idleOrder[0] = nil
		l.idleOrder = l.idleOrder[1:]
		if l.parked[p.fd] == p && now.Before(p.renewed) {
			p.until = p.renewed
			l.idleOrder = append(l.idleOrder, p)
			continue
		}
		if l.parked[p.fd] == p {
			l.unpark(p)
			_ = syscall.Close(p.fd)
		}
	}
	if len(l.idleOrder) == 0 {
		l.idleOrder = nil // let the emptied array go
	}
}

// closeParked closes every parked client, as the loop stops.
func (l *loop) closeParked() {
	l.shutting = true
	for _, p := range l.parked {
		l.unpark(p)
		_ = syscall.Close(p.fd)
	}
	l.idleOrder = nil
}
