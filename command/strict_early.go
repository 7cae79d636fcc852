package command

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/proxy"
)

// Early answers: net/http's work for a request (its request and header
// map, a response writer, a background read, deadlines) costs more than
// a refusal, and about as much as the rest of a small request's path. So
// the listener offers each plain request it holds whole to an
// earlyAnswerer (proxy.Proxy.AnswerEarly) before net/http sees it, which
// refuses it, or serves it and writes the engine's answer, or hands it
// on (the request then goes to net/http with its exchange, TakeHanded),
// or leaves it to net/http as before. --front-end=false turns it off.
//
// An early answer must not overtake one net/http owes: a connection
// answers in order. So a head is held back for an early answer only
// when net/http owes the connection nothing, which it knows by counting:
// given, the heads that went to net/http, against answered, the times
// net/http said the connection was idle again (http.StateIdle, after each
// answer on a connection kept alive). Between requests net/http waits
// for the next one in a read of this connection, with its idle deadline
// set; the early answers are written in that read, which goes on to the
// next request. A connection's first request is offered too, in
// net/http's first read, its header read (headerRead): an early answer
// there sets the idle deadline for the wait that follows, and a head
// that then comes is given the header deadline again as it goes to
// net/http (give), as net/http gives it after an idle wait. A connection
// that leaves net/http (a relayed stream, a parked request) may be
// served back under another connection value (proxy.Resume): net/http's
// answers are counted through the wrapper, and the relay tells of the
// answers it wrote (AnsweredOutside), after which net/http's read is a
// header read again. A stream the front end serves leaves net/http the
// same way (lend). Only a head that came whole, with its whole body, is held: a partial
// head goes to net/http as before, its request line first, so that
// net/http's header deadline runs for it. A request the client sends
// while net/http still watches the connection (its background read, as
// it finishes an answer) is kept here until net/http asks for it
// (holdNext). A request the front end parks leaves net/http the same way
// as a stream, and comes back to it with its own bytes ahead of the
// connection. Early answers stop before the server shuts down
// (stopEarly).

// earlyAnswerer answers, serves or hands on a request that the listener
// holds whole, or leaves it to net/http: proxy.Proxy.AnswerEarly.
type earlyAnswerer interface {
	AnswerEarly(head, body []byte, c proxy.EarlyClient) proxy.Early
}

// earlyState is what a connection keeps for early answers.
type earlyState struct {
	early   earlyAnswerer // nil: none
	idle    time.Duration // the server's idle timeout, renewed by early answers
	stopped *atomic.Bool  // the listener's: the server shuts down
	// given counts the heads that went to net/http (reads only);
	// answered, net/http's answers (countAnswers, on its connection's
	// goroutine).
	given    int64
	answered atomic.Int64
	// headerRead says net/http's read is its header read, under its
	// header deadline, not its idle wait: its first read of a connection
	// just accepted, or served again once the relay gave it back
	// (AnsweredOutside), until the next head goes to net/http (give).
	headerRead atomic.Bool
	// headerTimeout is the server's, which give sets again for a head
	// that comes after early answers in a header read.
	headerTimeout time.Duration
	// idleUntil is the read deadline (Unix nanoseconds) an early answer
	// last set; 0 once anyone else set one (SetReadDeadline).
	idleUntil atomic.Int64
	// handed goes with the request given to net/http last, until its
	// handler takes it (TakeHanded) or the connection closes.
	handed atomic.Pointer[proxy.Handed]
	// lent is the stream the front end served, whose head went out, for
	// the relay to carry, or the request it parked, for the queue, once
	// net/http closed the connection (Close).
	lent atomic.Pointer[proxy.Lent]
	// client is the connection's client as its early requests see it,
	// with their watch.
	client earlyClient
	// refusedRun counts the early refusals in a row on the connection:
	// waitAfterRefusals of them lend it to wait in the relay.
	refusedRun int
}

// waitAfterRefusals is how many refusals in a row make a connection wait
// in the relay (proxy/earlywait.go): under a storm at once, while a
// client refused now and then, near the cap, stays net/http's, which
// would otherwise pay the move out and back (some 20 system calls) for
// each of its refusals.
const waitAfterRefusals = 4

// give counts a head that went to net/http. A head that comes in a
// header read after an early answer renewed the idle deadline gets the
// header deadline net/http set when its read began, from now: net/http
// sets it itself after an idle wait, but not again in the read it began.
func (c *strictConn) give() {
	c.given++
	c.refusedRun = 0
	if c.headerRead.Swap(false) && c.idleUntil.Load() != 0 {
		c.idleUntil.Store(0)
		var d time.Time
		if c.headerTimeout > 0 {
			d = time.Now().Add(c.headerTimeout)
		}
		_ = c.Conn.SetReadDeadline(d)
	}
}

// countAnswers wraps a server's ConnState hook, next, to count the
// answers net/http finished on each strict connection, served as
// accepted or served again under a wrapper (proxy.Resume).
func countAnswers(next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, s http.ConnState) {
		if s == http.StateIdle {
			if sc := strictUnder(c); sc != nil {
				sc.answered.Add(1)
			}
		}
		if next != nil {
			next(c, s)
		}
	}
}

// strictUnder returns the strict connection under c's wrappers (those
// with a NetConn method, as tls.Conn has), or nil.
func strictUnder(c net.Conn) *strictConn {
	for {
		switch x := c.(type) {
		case *strictConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
}

// AnsweredOutside counts an answer that went to the connection outside
// net/http: a relayed stream's, which the proxy tells before it serves
// the connection again.
func (c *strictConn) AnsweredOutside() {
	c.headerRead.Store(true)
	c.answered.Add(1)
	c.mu.Lock()
	if c.st == stLent {
		c.st = stHead // the relay carried the stream lent to it
	}
	c.mu.Unlock()
}

// SetReadDeadline sets the socket's read deadline, which an early answer
// must then renew rather than trust its own (keepIdle).
func (c *strictConn) SetReadDeadline(t time.Time) error {
	c.idleUntil.Store(0)
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline: see SetReadDeadline.
func (c *strictConn) SetDeadline(t time.Time) error {
	c.idleUntil.Store(0)
	return c.Conn.SetDeadline(t)
}

// mayHold reports whether the request line just framed, n bytes without
// its CRLF, may be held with its head for an early answer: nothing is
// waiting to go to net/http before it, net/http has answered every
// request it was given and waits for the next (in its header read or its
// idle one), the server is not shutting down, and the whole head is here.
func (c *strictConn) mayHold(n int) bool {
	return c.early != nil && c.ready == c.scan-n-2 && c.given == c.answered.Load() &&
		!c.stopped.Load() && bytes.Contains(c.in[c.scan-2:], []byte("\r\n\r\n"))
}

// watched reports whether net/http holds the whole of the one request
// it serves and owes its answer, and nothing more is buffered: a read
// then is net/http's watch of the connection while it serves (its
// background read, which looks for the client leaving).
func (c *strictConn) watched() bool {
	return c.early != nil && c.ready == 0 && len(c.in) == 0 && c.head.lines == 0 &&
		c.given == c.answered.Load()+1 && c.stage() == stHead
}

// holdNext serves net/http's watch: it keeps what the client sends next
// (a request a client sends as soon as it has its answer, which it may
// have before net/http ends the watch), so that the request is framed
// once net/http asks for it, after its answer, and may be answered early.
// It returns the read's error: net/http ending its watch (a deadline in
// the past), or the client gone with nothing sent. It returns nil when
// what came must go to net/http now: the client sent a whole buffer's
// worth, or sent and left.
func (c *strictConn) holdNext(p []byte) error {
	for len(c.in) < inBufSize {
		// fill takes no buffer while nothing came: a watch holds none.
		if err := c.fill(p); err != nil {
			if isTimeout(err) || len(c.in) == 0 {
				return err
			}
			return nil
		}
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// answerEarly offers the held request, checked, to early, when its body
// is here whole. When early answered it, the request is dropped and the
// next head is framed as if it had never come (answerEarly returns
// true); when early handed it on, it goes to net/http with its exchange
// (TakeHanded).
func (c *strictConn) answerEarly() bool {
	h := &c.head
	end := int64(c.scan) + h.contentLength
	if h.chunked || h.upgrade || h.http10 || end > int64(len(c.in)) {
		return false
	}
	e := c.early.AnswerEarly(c.in[h.start:c.scan], c.in[c.scan:end], &c.client)
	if e.Handed != nil {
		c.handed.Store(e.Handed)
		return false
	}
	if !e.Answered {
		return false
	}
	if e.Gone {
		// net/http's read fails as a client gone.
		c.setStage(stDead)
		return true
	}
	c.in = c.in[:h.start+copy(c.in[h.start:], c.in[end:])]
	c.scan, h.lines, h.held = h.start, 0, false
	if len(c.in) == 0 {
		c.freeIn()
	}
	switch {
	case e.Lent != nil && e.Lent.Waits():
		if c.refusedRun++; c.refusedRun >= waitAfterRefusals && len(c.in) == 0 && c.sock.Usable() {
			c.lendWait(e.Lent)
			return true
		}
	case e.Lent != nil:
		c.refusedRun = 0
		c.lend(e.Lent)
		return true
	default:
		c.refusedRun = 0
	}
	c.keepIdle()
	return true
}

// lendWait lets net/http go of the connection for its client, refused
// time and again, to wait in the relay (proxy.Lent.Wait), as lend does
// for a stream. net/http owes it nothing: no head counts as given, and it
// serves the connection again as if just accepted (WaitedOutside).
func (c *strictConn) lendWait(s *proxy.Lent) {
	c.refusedRun = 0
	c.lent.Store(s)
	c.setStage(stLent)
}

// WaitedOutside takes the connection back from the relay's wait
// (proxy.WaitingConn): net/http's next read is a header read, of ahead,
// the client's bytes the relay read, framed first.
func (c *strictConn) WaitedOutside(ahead []byte) {
	c.headerRead.Store(true)
	c.mu.Lock()
	if c.st == stLent {
		c.st = stHead
	}
	c.mu.Unlock()
	if len(ahead) > 0 {
		c.pooled = c.bufs.Get().(*[]byte)
		c.in = append((*c.pooled)[:0], ahead...)
	}
}

// lend lets net/http go of the connection for the relay to carry a
// stream the front end served on it, or for a request the front end
// parked to wait: net/http's reads fail as a client gone's (stLent),
// which it answers with nothing, and its Close starts the stream, or
// queues the request, in place of closing. Either counts as a head given
// to net/http: the relay's AnsweredOutside counts the stream answered,
// and net/http the parked request, which it serves once decided.
func (c *strictConn) lend(s *proxy.Lent) {
	c.given++
	c.lent.Store(s)
	c.setStage(stLent)
}

// TakeHanded gives the handler of the request net/http read last the
// exchange the front end handed on with it (proxy.HandedConn).
func (c *strictConn) TakeHanded() *proxy.Handed { return c.handed.Swap(nil) }

// Close closes the connection; an exchange handed on with a request
// that net/http never served ends here. net/http's Close of a lent
// connection gives it to the relay, or its parked request to the queue,
// instead (lend).
func (c *strictConn) Close() error {
	if s := c.lent.Swap(nil); s != nil {
		if s.Waits() {
			if err := s.Wait(c); err != nil {
				return c.Conn.Close()
			}
			return nil
		}
		if s.Parks() {
			// The request comes back to net/http from its own bytes,
			// and net/http's reads of the connection after it are its
			// waits for the next request.
			c.headerRead.Store(false)
			c.setStage(stHead)
		}
		s.Start(len(c.in) == 0) // what is left is the client's next request
		return nil
	}
	if hd := c.handed.Swap(nil); hd != nil {
		hd.Abandon()
	}
	return c.Conn.Close()
}

// keepIdle renews the idle deadline net/http set for the read an early
// answer is written in, so that the client is cut off as idle only the
// idle timeout after its last answer, as net/http would. A deadline
// costs a timer's reset, so it is renewed at most once a second (an
// eighth of the idle timeout, if shorter): the cut comes within that of
// the timeout.
func (c *strictConn) keepIdle() {
	if c.idle <= 0 {
		if c.headerRead.Load() && c.idleUntil.Load() == 0 {
			// net/http's idle wait would have no deadline, unlike
			// the header read the answer was written in.
			_ = c.Conn.SetReadDeadline(time.Time{})
			c.idleUntil.Store(-1)
		}
		return
	}
	now := time.Now()
	slack := min(time.Second, c.idle/8)
	if until := c.idleUntil.Load(); until != 0 && time.Unix(0, until).Sub(now) > c.idle-slack {
		return
	}
	until := now.Add(c.idle)
	_ = c.Conn.SetReadDeadline(until)
	c.idleUntil.Store(until.UnixNano())
}
