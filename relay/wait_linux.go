package relay

import (
	"bytes"
	"errors"
	"syscall"
	"time"

	"github.com/slotgate/slotgate/internal/rawio"
)

// Wait takes w's socket out of Go's netpoller and parks it in a loop,
// where it waits for the client's next request (Waiter). It fails when
// the socket cannot be moved out (the connection as it was), or once the
// relay stopped (the connection moved back in and closed: the client's
// last request was answered, and no loop is left to wait in). From its
// success on, the socket is the loop's until Resume gets it back or the
// loop closes it: the client hung up, stayed idle past w.Idle, or
// outlived the relay.
func (r *Relay) Wait(w *Waiter) error {
	fd, err := w.Mover.MoveOut()
	if err != nil {
		return err
	}
	l := r.pickWaiting()
	if err := l.queue(func() { l.parkWaiter(fd, w) }); err != nil {
		if c, err := w.Mover.MoveIn(fd); err == nil {
			_ = c.Close()
		}
		return err
	}
	return nil
}

// waiterEvents are a waiting client's: its next bytes, its hang-up, and
// room to write an answer it did not take whole.
const waiterEvents = parkedEvents | syscall.EPOLLOUT

// parkWaiter keeps fd, w's socket, in the set; a loop that is stopping
// closes it.
func (l *loop) parkWaiter(fd int, w *Waiter) {
	if l.shutting {
		_ = syscall.Close(fd)
		return
	}
	l.gen++
	p := &parkedConn{fd: fd, gen: l.gen, mover: w.Mover, answer: w.Answer, resumeAhead: w.Resume, idle: w.Idle}
	ev := syscall.EpollEvent{Events: waiterEvents, Fd: int32(fd), Pad: p.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		_ = syscall.Close(fd)
		return
	}
	l.parked[fd] = p
	l.parkedN.Add(1)
	l.waiting.Add(1)
	if p.idle > 0 {
		p.until = time.Now().Add(p.idle)
		l.idleOrder = append(l.idleOrder, p)
	}
}

// waiterEvent acts on a waiting client's event: what is left of an answer
// goes first; then the request that came is answered here, or the socket
// goes back to its connection with it. The socket was registered
// edge-triggered, and a read shorter than the buffer drained it: its
// next bytes are a new event.
func (l *loop) waiterEvent(p *parkedConn, events uint32) {
	if len(p.pending) > 0 && !l.flushWaiter(p) {
		return
	}
	n, err := rawio.Read(p.fd, l.buf)
	for errors.Is(err, syscall.EINTR) {
		n, err = rawio.Read(p.fd, l.buf)
	}
	switch {
	case errors.Is(err, syscall.EAGAIN):
		if events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			l.closeWaiter(p)
		}
		return
	case err != nil || n == 0:
		l.closeWaiter(p) // hung up, or the socket failed
		return
	}
	req := l.buf[:n]
	if n == len(l.buf) {
		l.resumeWaiter(p, req) // more than one request the loop answers
		return
	}
	out, ok := p.answer(req, l.out[:0])
	if !ok {
		l.resumeWaiter(p, req)
		return
	}
	l.out = out[:0]
	w, err := writeSome(p.fd, out)
	switch {
	case err != nil:
		l.closeWaiter(p)
		return
	case w < len(out):
		p.pending = append(p.pending[:0], out[w:]...) // room's event writes it
	case events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0:
		l.closeWaiter(p) // the client sends no more: its answer went whole
		return
	}
	if p.idle > 0 {
		p.renewed = time.Now().Add(p.idle)
	}
}

// flushWaiter writes what is left of p's last answer, and reports whether
// it went whole (false also when the write failed: p is then closed).
func (l *loop) flushWaiter(p *parkedConn) bool {
	w, err := writeSome(p.fd, p.pending)
	if err != nil {
		l.closeWaiter(p)
		return false
	}
	p.pending = p.pending[:copy(p.pending, p.pending[w:])]
	return len(p.pending) == 0
}

// closeWaiter takes p out and closes its socket.
func (l *loop) closeWaiter(p *parkedConn) {
	l.unpark(p)
	_ = syscall.Close(p.fd)
}

// resumeWaiter gives p's socket back to its connection, and the
// connection to Resume with req, the bytes read, ahead of it.
func (l *loop) resumeWaiter(p *parkedConn, req []byte) {
	l.unpark(p)
	c, err := p.mover.MoveIn(p.fd) // closes the socket on failure
	if err != nil {
		return
	}
	p.resumeAhead(c, bytes.Clone(req))
}
