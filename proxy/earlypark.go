package proxy

import (
	"time"

	"github.com/slotgate/slotgate/limiter"
)

// Requests parked before net/http: a request the front end finds would
// wait (gate.AdmitAtOnce holds it a place in the queue) is parked from
// the listener's bytes, as park.go parks one from its handler, but
// without net/http ever reading it. The listener makes net/http let go of
// the connection, as for a lent stream, and at net/http's Close the
// request takes its held place in the queue (gate.ParkAtOnce), the
// relay's loop watching its client. Once decided it goes back to the
// server with its bytes, exactly as the client sent them, ahead of the
// connection (parking.Resume), and its handler goes on from the decision
// as for a request its handler parked. What the first pass through
// net/http cost is gone: its request, header map and context, a handler,
// the body's read, and the hijack, whose reader and writer were garbage
// (most of what a queued request left the collector, and why the memory
// a queue held swung with the collector's timing).

// Lent is a connection the front end lent out of net/http: a stream
// whose head went out and whose body the relay is to carry on it, a
// request parked to wait in the queue, or a refused client's connection
// to wait in the relay (earlywait.go). Each starts once net/http let go
// of the connection (Start, or Wait).
type Lent struct {
	rs    *relayed
	pk    *parking             // a parked request, in place of rs
	held  *limiter.Reservation // pk's place in the queue
	waits *Proxy               // a refused client's connection: one Lent a proxy
}

// Parks reports whether l is a parked request: net/http reads its
// connection again once the request is decided.
func (l *Lent) Parks() bool { return l.pk != nil }

// Start starts what was lent. A stream goes to the relay, which ends it;
// one the relay refuses ends here, its connections closed. clear says the
// connection holds nothing the client sent past the stream's request: the
// relay may then keep the client's socket once the answer ended, until
// its next request (relay.Stream.Park), which a client that hangs up
// after one stream never sends. A parked request takes its place in the
// queue; the listener has made its connection readable by net/http again
// before, as the decision may send it back to the server at once.
func (l *Lent) Start(clear bool) {
	if pk := l.pk; pk != nil {
		pk.ex.p.gate.ParkAtOnce(&pk.ex.Exchange, pk, l.held)
		return
	}
	rs := l.rs
	if clear && rs.keep {
		rs.stream.Park, rs.stream.ParkIdle = rs.ex.p.relay.Resume, rs.ex.p.relay.Idle
	}
	if rs.add() != nil {
		rs.ex.p.end(rs.ex, false, time.Now())
	}
}

// parkEarly parks the request of h (head and body), which would wait in
// the place held, when the front end can: the relay is on and can watch
// the client's connection, and the body fits the budget for bodies held
// in memory (it waits with the request, as a parked body does). ok false
// changes nothing: the request goes to net/http with its place.
func (p *Proxy) parkEarly(ex *exchange, h *earlyHead, head, body []byte, c EarlyClient, held *limiter.Reservation) (e Early, ok bool) {
	conn, ok := p.lendable(c)
	if !ok || p.relay.Resume == nil {
		return Early{}, false
	}
	n := int64(len(body))
	if !p.budget.take(n) {
		return Early{}, false
	}
	ex.watch.held = n
	ex.line = h.line(c.RemoteAddr())
	pk := &ex.park
	pk.ex, pk.conn = ex, conn
	pk.ahead = append(append(make([]byte, 0, len(head)+len(body)), head...), body...)
	return Early{Answered: true, Lent: &Lent{pk: pk, held: held}}, true
}
