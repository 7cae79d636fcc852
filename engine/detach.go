package engine

import (
	"net"
	"net/http"

	"github.com/slotgate/slotgate/internal/rawio"
)

// Detached is the connection of an answer taken out of the client, for a
// caller that reads its body from the socket itself (a relay): Conn, and
// Buffered, the body's bytes already read with the head, in the framing
// the engine sent them.
type Detached struct {
	Conn     net.Conn
	Buffered []byte
	body     *answerBody
}

// Detachable reports whether Detach can take resp's connection: an answer
// of the hand-written path, chunked, whose body was neither read nor
// closed.
func Detachable(resp *http.Response) bool {
	b, ok := resp.Body.(*answerBody)
	return ok && !b.read && !b.end && len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
}

// Detach takes resp's connection (see Detachable): from then on the body
// is the caller's to read from Conn, and closing resp.Body does nothing.
// It fails when the request's context ended first, which cut the
// connection short. The caller ends it with Done.
func Detach(resp *http.Response) (*Detached, bool) {
	if !Detachable(resp) {
		return nil, false
	}
	b := resp.Body.(*answerBody)
	b.end = true
	if !b.unwatch() {
		_ = b.ec.c.Close()
		return nil, false
	}
	n := b.ec.br.Buffered()
	buf, _ := b.ec.br.Peek(n) // never fails: n bytes are buffered
	// The Detached keeps a copy of the body's wrapper, not the answer's
	// parts it lives in: a stream holds no more than it needs.
	d := &Detached{Conn: b.ec.c, Buffered: append([]byte(nil), buf...), body: b.alone()}
	// The connection's reader is empty now, and the body reads nothing
	// more: the reader goes back (a stream holds no buffer), and the
	// connection's next request takes one.
	b.ReadCloser = http.NoBody
	b.ec.dropReader()
	// The context's watch is over; its stop function would keep the
	// request's contexts alive for as long as the stream.
	b.stop, b.cut = nil, nil
	d.body.stop, d.body.cut, d.body.ReadCloser = nil, nil, http.NoBody
	return d, true
}

// MoveOut lends the connection's socket to a relay, out of Go's netpoller
// (relay.Mover, rawio.MoveOut): the connection makes no call until
// MoveIn.
func (d *Detached) MoveOut() (int, error) {
	fd, err := rawio.MoveOut(d.Conn)
	if err == nil {
		d.Conn = rawio.Moved() // the closed one goes
		d.body.ec.setConn(d.Conn)
	}
	return fd, err
}

// MoveIn gives the socket back (relay.Mover): the connection works on it
// again, for Done to reuse or close. On failure the descriptor and the
// connection are closed.
func (d *Detached) MoveIn(fd int) (net.Conn, error) {
	c, err := rawio.MoveIn(fd)
	if err != nil {
		return nil, err
	}
	d.body.ec.setConn(c)
	d.Conn = c
	return c, nil
}

// Done gives the connection back: to the pool when reuse says the body
// was read to its end and nothing past it, and the engine keeps the
// connection; closed otherwise (the engine then sees the request
// abandoned).
func (d *Detached) Done(reuse bool) {
	if reuse && d.body.keep {
		d.body.pool.put(d.body.ec)
		return
	}
	_ = d.Conn.Close()
}
