package relay

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
)

// batchStream is a stream registered on a loop the test drives itself:
// the engine's end the test writes to, the client's end it reads from.
type batchStream struct {
	st             *stream
	engine, client net.Conn
	done           []Result
}

// newBatchLoop returns a loop that no goroutine runs: the test takes its
// events and hands them to it, batch by batch (runBatch).
func newBatchLoop(t *testing.T) *loop {
	t.Helper()
	l, err := newLoop(new(atomic.Uint64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

func addBatchStream(t *testing.T, l *loop) *batchStream {
	t.Helper()
	b := &batchStream{}
	var relayEngine, relayClient net.Conn
	b.engine, relayEngine = loopback.Pair(t)
	b.client, relayClient = loopback.Pair(t)
	efd, err := fdOf(relayEngine)
	if err != nil {
		t.Fatal(err)
	}
	cfd, err := fdOf(relayClient)
	if err != nil {
		t.Fatal(err)
	}
	b.st = &stream{Stream: &Stream{Engine: relayEngine, Client: relayClient, OnData: func([]byte) {},
		Done: func(res Result) { b.done = append(b.done, res) }}, efd: efd, cfd: cfd}
	if ended := l.register(b.st, nil); len(ended) != 0 {
		t.Fatalf("register ended the stream: %+v", ended[0].res)
	}
	return b
}

// handleReady hands the loop every event of its set until the engines'
// writes have all been seen (the kernel may report them over more than
// one wait), without writing the batch, and returns the streams ended.
func handleReady(t *testing.T, l *loop, streams ...*batchStream) []ending {
	t.Helper()
	var ended []ending
	events := make([]syscall.EpollEvent, 64)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		n, err := epollNow(l.epfd, events)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events[:n] {
			ended = l.handle(ev, ended)
		}
		if allSeen(streams) {
			return ended
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the loop never saw the engines' writes")
	return nil
}

// allSeen reports whether every stream's engine was read (its read waits
// in the batch) or the stream ended.
func allSeen(streams []*batchStream) bool {
	for _, b := range streams {
		if !b.st.pending && b.st.l.streams[b.st.efd] == b.st {
			return false
		}
	}
	return true
}

// clientHas reports how many bytes wait at c's end, without taking them.
func clientHas(t *testing.T, c net.Conn) int {
	t.Helper()
	fd, err := fdOf(c)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<10)
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if errors.Is(err, syscall.EAGAIN) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// TestBatchWritesAfterItsReads: the streams a batch of events made ready
// are all read before any client is written to, and every read then
// goes to its client whole and in order.
func TestBatchWritesAfterItsReads(t *testing.T) {
	l := newBatchLoop(t)
	streams := []*batchStream{addBatchStream(t, l), addBatchStream(t, l), addBatchStream(t, l)}
	for i, b := range streams {
		if _, err := b.engine.Write([]byte(chunk(fmt.Sprintf("data: %d\n\n", i)))); err != nil {
			t.Fatal(err)
		}
	}
	ended := handleReady(t, l, streams...)
	for i, b := range streams {
		if n := clientHas(t, b.client); n != 0 {
			t.Errorf("stream %d: its client had %d bytes before the batch's reads were done", i, n)
		}
	}
	if got := len(l.batch.writes); got != len(streams) {
		t.Errorf("%d reads wait in the batch, want %d", got, len(streams))
	}
	ended = l.writeBatch(ended)
	if len(ended) != 0 {
		t.Fatalf("the batch ended %d streams: %+v", len(ended), ended[0].res)
	}
	for i, b := range streams {
		readExactly(t, b.client, chunk(fmt.Sprintf("data: %d\n\n", i)))
		if b.st.pending {
			t.Errorf("stream %d still pending after the batch was written", i)
		}
	}
	if len(l.batch.writes) != 0 || len(l.batch.bytes) != 0 {
		t.Errorf("the batch holds %d writes, %d bytes after it was written, want none", len(l.batch.writes), len(l.batch.bytes))
	}
}

// TestBatchSkipsAStreamItEnded: a stream whose client hung up in the same
// batch as its engine's read ends cut, and its read is not written; the
// others' are.
func TestBatchSkipsAStreamItEnded(t *testing.T) {
	l := newBatchLoop(t)
	gone, kept := addBatchStream(t, l), addBatchStream(t, l)
	for _, b := range []*batchStream{gone, kept} {
		if _, err := b.engine.Write([]byte(chunk("data: x\n\n"))); err != nil {
			t.Fatal(err)
		}
	}
	ended := handleReady(t, l, gone, kept)
	if !gone.st.pending {
		t.Fatal("the first stream's read is not in the batch")
	}
	_ = gone.client.Close()
	deadline := time.Now().Add(wait)
	for len(ended) == 0 && time.Now().Before(deadline) {
		ended = handleReady(t, l, gone, kept)
	}
	if len(ended) != 1 || ended[0].st != gone.st || !ended[0].res.ClientGone {
		t.Fatalf("ended %+v, want the first stream, its client gone", ended)
	}
	if gone.st.pending {
		t.Error("an ended stream still pending in the batch")
	}
	ended = l.writeBatch(ended)
	callDone(ended)
	if len(gone.done) != 1 || gone.done[0].Sent != 0 {
		t.Errorf("the ended stream's Done: %+v, want one call with nothing sent", gone.done)
	}
	if gone.st.sent != 0 {
		t.Errorf("the batch wrote %d bytes of a stream it had ended", gone.st.sent)
	}
	readExactly(t, kept.client, chunk("data: x\n\n"))
}

// TestBatchWritesAReadTooBigAtOnce: a read with no room left in the batch
// goes to its client at once, as before batches.
func TestBatchWritesAReadTooBigAtOnce(t *testing.T) {
	l := newBatchLoop(t)
	l.batch.bytes = make([]byte, 0, 16)
	b := addBatchStream(t, l)
	want := chunk(strings.Repeat("x", 32))
	if _, err := b.engine.Write([]byte(want)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for clientHas(t, b.client) < len(want) && time.Now().Before(deadline) {
		handleReady(t, l)
		time.Sleep(time.Millisecond)
	}
	if b.st.pending || len(l.batch.writes) != 0 {
		t.Fatal("a read bigger than the batch's room waits in it")
	}
	readExactly(t, b.client, want)
}

// TestBatchReadsOnAfterItsWrite: while a stream's read waits in the batch,
// neither its client's room nor its engine's next event reads the engine
// again; the batch's write does, and the client gets both reads in order.
func TestBatchReadsOnAfterItsWrite(t *testing.T) {
	l := newBatchLoop(t)
	b := addBatchStream(t, l)
	first, second := chunk("data: 1\n\n"), chunk("data: 2\n\n")
	if _, err := b.engine.Write([]byte(first)); err != nil {
		t.Fatal(err)
	}
	ended := handleReady(t, l, b)
	if _, err := b.engine.Write([]byte(second)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for !b.st.engineReady && time.Now().Before(deadline) {
		ended = handleReady(t, l, b) // the engine's event for the second write
	}
	if !b.st.engineReady || len(l.batch.writes) != 1 {
		t.Fatalf("the engine's event read the engine again while its read waited: %d in the batch", len(l.batch.writes))
	}
	if ended = l.flush(b.st, ended); len(ended) != 0 || len(l.batch.writes) != 1 {
		t.Fatalf("the client's room read the engine again while its read waited: %d in the batch", len(l.batch.writes))
	}
	ended = l.writeBatch(ended)
	if len(ended) != 0 {
		t.Fatalf("the batch ended the stream: %+v", ended[0].res)
	}
	readExactly(t, b.client, first+second)
}

// TestBatchCutByAnEngineReset: an engine that resets its connection while
// the stream's read waits in the batch cuts the stream at its event, as
// while a slow client has bytes still to take.
func TestBatchCutByAnEngineReset(t *testing.T) {
	l := newBatchLoop(t)
	b := addBatchStream(t, l)
	if _, err := b.engine.Write([]byte(chunk("data: 1\n\n"))); err != nil {
		t.Fatal(err)
	}
	ended := handleReady(t, l, b)
	_ = b.engine.(*net.TCPConn).SetLinger(0)
	_ = b.engine.Close() // a reset
	deadline := time.Now().Add(wait)
	for len(ended) == 0 && time.Now().Before(deadline) {
		ended = handleReady(t, l, b)
	}
	if len(ended) != 1 || !errors.Is(ended[0].res.Err, errEngineEOF) {
		t.Fatalf("ended %+v, want the stream cut by the engine", ended)
	}
	if b.st.pending {
		t.Error("a cut stream still pending in the batch")
	}
	callDone(l.writeBatch(ended))
	if len(b.done) != 1 || b.done[0].Ended {
		t.Errorf("Done: %+v, want one call, cut", b.done)
	}
}
