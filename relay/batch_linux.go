package relay

// A loop reads every stream its batch of events made ready before it
// writes to any client: each read's bytes wait in the batch, and the
// writes go out together once the batch's events are handled, before
// the batch's Done calls.
//
// Written one by one, as each read came, a loop's writes to the clients
// were spread over the whole batch, a few microseconds apart: time
// enough for a client's poller to wake for one, take it, and sleep again
// before the next, over and over. Behind slotgate the bench's client
// slept and woke a fifth to three fifths more often than behind HAProxy,
// whose event loop also runs its streams' sends after its reads, and
// every such wake-up is paid in the writer's sendto and takes a core
// from the loop (BENCHMARKS.md, "A batch's writes together").
//
// A stream's first bytes (those that came with its head) and a read too
// big for the batch's room left are written at once, as before.
//
// Order and back-pressure stay as they were: a stream's read waits in
// the batch (pending) until it is written, and its engine is not read
// again meanwhile, so a stream still holds at most one read's worth of
// bytes its client has not taken. The parser and OnEnd see each read as
// it comes, before any of it is written. An engine that resets the
// connection while a stream's read waits cuts the stream at once, as
// one does while its client has bytes still to take.

// batchSize is the room for a batch's reads: events are a few hundred
// bytes, and a batch at most 256 of them (and the streams handed over
// since the last, each read as it starts).
const batchSize = 128 << 10

// batch holds the reads of one batch of events until they are written.
type batch struct {
	bytes  []byte
	writes []batchWrite
	// writing is set while writeBatch writes: a stream read again then
	// (its read filled the buffer, or its engine's event came while the
	// read waited) is written at once.
	writing bool
}

// batchWrite is one stream's read, bytes[off:end] of the batch.
type batchWrite struct {
	st       *stream
	off, end int
}

// deferWrite keeps p, st's latest read, for the batch's end, and
// reports whether it did: not when p is empty (nothing to write, only
// maybe the stream's end), bigger than the room left, or while the
// batch is being written.
func (l *loop) deferWrite(st *stream, p []byte) bool {
	b := &l.batch
	if b.writing || len(p) == 0 || len(p) > cap(b.bytes)-len(b.bytes) {
		return false
	}
	off := len(b.bytes)
	b.bytes = append(b.bytes, p...)
	b.writes = append(b.writes, batchWrite{st: st, off: off, end: len(b.bytes)})
	st.pending = true
	return true
}

// writeBatch writes the batch's reads, each to its stream's client, in
// the order read; a stream the batch ended since (end clears pending) is
// skipped.
func (l *loop) writeBatch(ended []ending) []ending {
	b := &l.batch
	b.writing = true
	for _, w := range b.writes {
		if w.st.pending {
			ended = l.writeDeferred(w.st, b.bytes[w.off:w.end], ended)
		}
	}
	b.writing = false
	clear(b.writes)
	b.writes, b.bytes = b.writes[:0], b.bytes[:0]
	return ended
}

// writeDeferred writes p, st's read kept in the batch; once the client
// took it all, the engine is read again if it may have more (the read
// filled the buffer, or an engine event came while it waited, which
// event() left to this read: an edge is not lost), written at once.
func (l *loop) writeDeferred(st *stream, p []byte, ended []ending) (out []ending) {
	st.pending = false
	defer l.cutOnPanic(st, ended, &out)
	return l.writeThenRead(st, p, ended)
}
