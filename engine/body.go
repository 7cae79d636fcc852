package engine

import "io"

// answerBody gives the connection back to the pool once the answer has
// been read to its end, and closes it otherwise. The caller reads and
// closes it on one goroutine (ReverseProxy: the handler's).
type answerBody struct {
	io.ReadCloser
	pool     *pool
	ec       *conn
	stop     func() bool // ends the context's watch; false once it cut the deadline
	cut      *Cut        // instead of stop: the caller's (SendRaw)
	keep     bool        // the engine keeps the connection open
	eof, end bool
	read     bool // Read was called
	// parts holds the body and the rest of its answer (Client.Recycle).
	parts *answerParts
}

// alone returns a copy of b that is not part of an answer's parts.
func (b *answerBody) alone() *answerBody {
	c := *b
	c.parts = nil
	return &c
}

func (b *answerBody) Read(p []byte) (int, error) {
	b.read = true
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *answerBody) Close() error {
	if b.end {
		return nil
	}
	b.end = true
	if !b.eof || !b.keep {
		// Closed before its end (a client that left, a failed write):
		// the connection goes first, so that the body's Close, which
		// would otherwise read the rest of a stream to its end, returns
		// at once, and the engine sees the request abandoned.
		b.unwatch()
		_ = b.ec.c.Close()
		_ = b.ReadCloser.Close()
		return nil
	}
	err := b.ReadCloser.Close() // at its end: nothing left to read
	// stop fails when the context has ended and the deadline was cut.
	// Bytes already read past the answer's end (an engine that sent more
	// than its Content-Length said) would be read as the next request's
	// answer: such a connection is closed, as net/http's Transport closes
	// one that speaks while idle.
	if b.unwatch() && err == nil && b.ec.br.Buffered() == 0 {
		b.ec.dropReader() // the body, read to its end, reads it no more
		b.pool.put(b.ec)
		return nil
	}
	_ = b.ec.c.Close()
	return err
}

// unwatch ends the watch of the exchange's context or Cut, and reports
// false when it cut the connection.
func (b *answerBody) unwatch() bool {
	if b.cut != nil {
		return b.cut.unwatch()
	}
	return b.stop()
}
