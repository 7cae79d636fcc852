package relay

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/epollinfo"
	"github.com/slotgate/slotgate/internal/loopback"
	"github.com/slotgate/slotgate/internal/rawio"
)

// testMover lends a connection's socket as the proxy's connections do
// (rawio.MoveOut, MoveIn), and remembers where it stands.
type testMover struct {
	c       net.Conn // the connection, replaced when moved back in
	out, in int      // calls that succeeded
	fd      int      // the descriptor moved out last
	fail    error    // MoveOut fails with it
	// given are the connections MoveIn made, closed when the test ends:
	// left to their finalizers, they closed during a later test, whose
	// count of open descriptors (TestWatch's) then came out short.
	mu    sync.Mutex
	given []net.Conn
}

// newTestMover returns a Mover of c whose MoveOut fails with fail, if
// any.
func newTestMover(t *testing.T, c net.Conn, fail error) *testMover {
	m := &testMover{c: c, fail: fail}
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, c := range m.given {
			_ = c.Close()
		}
	})
	return m
}

func (m *testMover) MoveOut() (int, error) {
	if m.fail != nil {
		return -1, m.fail
	}
	fd, err := rawio.MoveOut(m.c)
	if err == nil {
		m.out++
		m.fd = fd
	}
	return fd, err
}

func (m *testMover) MoveIn(fd int) (net.Conn, error) {
	c, err := rawio.MoveIn(fd)
	if err != nil {
		return nil, err
	}
	m.c = c
	m.in++
	m.mu.Lock()
	m.given = append(m.given, c)
	m.mu.Unlock()
	return c, nil
}

// moved is a stream added to a relay with Movers on its relay ends
// (testMover), as the proxy's are: the far ends, the relay's ends as
// given, their Movers, and what Done got.
type moved struct {
	engine, client           *net.TCPConn
	relayEngine, relayClient *net.TCPConn
	em, cm                   *testMover
	done                     chan movedDone
}

// movedDone is a Done's Result, with the Movers' MoveIn counts then.
type movedDone struct {
	res                Result
	engineIn, clientIn int
}

// addMoved adds such a stream to r, with park and idle as its Park and
// ParkIdle.
func addMoved(t *testing.T, r *Relay, park func(net.Conn), idle time.Duration) *moved {
	t.Helper()
	m := &moved{done: make(chan movedDone, 1)}
	m.engine, m.relayEngine = loopback.Pair(t)
	m.client, m.relayClient = loopback.Pair(t)
	m.em, m.cm = newTestMover(t, m.relayEngine, nil), newTestMover(t, m.relayClient, nil)
	err := r.Add(&Stream{Engine: m.relayEngine, Client: m.relayClient, EngineMover: m.em, ClientMover: m.cm,
		OnData: func([]byte) {}, Done: func(res Result) { m.done <- movedDone{res, m.em.in, m.cm.in} },
		Park: park, ParkIdle: idle})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ended waits for the stream's Done.
func (m *moved) ended(t *testing.T) movedDone {
	t.Helper()
	select {
	case d := <-m.done:
		return d
	case <-time.After(wait):
		t.Fatal("the stream did not end")
		return movedDone{}
	}
}

// TestStreamMovedOut: with Movers, the relay carries a stream on sockets
// taken out of Go's netpoller (the connections it was given are closed
// meanwhile), gives both back before Done, and the connections it gives
// back work: the client's next request and the engine's next answer pass.
func TestStreamMovedOut(t *testing.T) {
	r, _ := startRelay(t, 1)
	m := addMoved(t, r, nil, 0)
	engine, client, em, cm := m.engine, m.client, m.em, m.cm
	if em.out != 1 || cm.out != 1 {
		t.Fatalf("MoveOut calls: engine %d, client %d; want 1 each", em.out, cm.out)
	}
	for _, c := range []net.Conn{m.relayEngine, m.relayClient} {
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("a moved-out connection's Write = %v, want net.ErrClosed", err)
		}
	}
	// Only the loop's set watches the sockets: Go's netpoller does not.
	for _, m := range []*testMover{em, cm} {
		waitSets(t, m.fd, []int{r.loops[0].epfd})
	}
	body := "5\r\nhello\r\n0\r\n\r\n"
	if _, err := engine.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	readExactly(t, client, body)
	d := m.ended(t)
	if !d.res.Ended || !d.res.EngineReusable {
		t.Errorf("Result = %+v, want Ended and EngineReusable", d.res)
	}
	if d.engineIn != 1 || d.clientIn != 1 {
		t.Fatalf("Done came with MoveIn counts %d, %d, want both moved back first", d.engineIn, d.clientIn)
	}
	// Both connections given back work, each way.
	pass := func(from, to net.Conn, what string) {
		t.Helper()
		if _, err := from.Write([]byte(what)); err != nil {
			t.Fatalf("write %q: %v", what, err)
		}
		readExactly(t, to, what)
	}
	pass(client, cm.c, "GET /next")
	pass(cm.c, client, "HTTP/1.1 200")
	pass(em.c, engine, "POST /again")
	pass(engine, em.c, "answer")
}

// TestStreamCutClosesItsSockets: a stream that did not end (the engine
// closed its side mid-answer) gives neither socket back into Go's
// netpoller, neither connection being of use again: the relay closes both
// itself before Done, which the client sees as the end of its
// connection, and the connections keep their closed stand-ins.
func TestStreamCutClosesItsSockets(t *testing.T) {
	r, _ := startRelay(t, 1)
	m := addMoved(t, r, nil, 0)
	if _, err := m.engine.Write([]byte("5\r\nhel")); err != nil {
		t.Fatal(err)
	}
	_ = m.engine.Close()
	d := m.ended(t)
	if d.res.Ended || d.res.EngineReusable {
		t.Errorf("Result = %+v, want a stream cut", d.res)
	}
	if d.engineIn != 0 || d.clientIn != 0 {
		t.Fatalf("Done came with MoveIn counts %d, %d, want neither socket moved back", d.engineIn, d.clientIn)
	}
	_ = m.client.SetReadDeadline(time.Now().Add(wait))
	if got, err := io.ReadAll(m.client); err != nil {
		t.Fatalf("the client's connection after the cut: read %q, %v; want it closed", got, err)
	}
	for _, c := range []net.Conn{m.em.c, m.cm.c} {
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("a connection not given back: Write = %v, want net.ErrClosed", err)
		}
	}
}

// TestStreamNotMovedWhenAMoverFails: a client socket that cannot be moved
// fails Add, and the engine's, moved already, is back and working.
func TestStreamNotMovedWhenAMoverFails(t *testing.T) {
	r, _ := startRelay(t, 1)
	engine, relayEngine := loopback.Pair(t)
	_, relayClient := loopback.Pair(t)
	em := newTestMover(t, relayEngine, nil)
	cm := newTestMover(t, relayClient, errors.New("no descriptor left"))
	err := r.Add(&Stream{Engine: relayEngine, Client: relayClient, EngineMover: em, ClientMover: cm,
		OnData: func([]byte) {}, Done: func(Result) { t.Error("Done called for a stream Add refused") }})
	if err == nil {
		t.Fatal("Add succeeded with a client socket that could not be moved")
	}
	if em.out != 1 || em.in != 1 {
		t.Fatalf("engine Mover: %d out, %d in; want it moved back", em.out, em.in)
	}
	if _, err := em.c.Write([]byte("still")); err != nil {
		t.Fatalf("the engine's connection given back: %v", err)
	}
	readExactly(t, engine, "still")
}

func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// TestLoopSetBehindAGate: the loop's epoll set is watched by its gate
// alone, and the gate by Go's netpoller: the set's events reach the
// netpoller only through the gate, armed while the loop parks.
func TestLoopSetBehindAGate(t *testing.T) {
	r, _ := startRelay(t, 1)
	l := r.loops[0]
	waitSets(t, l.epfd, []int{l.gatefd})
	sets, err := epollinfo.SetsHolding(l.gatefd)
	if err != nil {
		t.Skipf("cannot read the epoll sets from /proc: %v", err)
	}
	if len(sets) != 1 {
		t.Errorf("the gate is in epoll sets %v, want one: Go's netpoller", sets)
	}
}

// waitSets waits until the epoll sets that hold fd's file are want.
func waitSets(t *testing.T, fd int, want []int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		sets, err := epollinfo.SetsHolding(fd)
		if err != nil {
			t.Skipf("cannot read the epoll sets from /proc: %v", err)
		}
		if slices.Equal(sets, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("descriptor %d is in epoll sets %v, want %v", fd, sets, want)
		}
		time.Sleep(time.Millisecond)
	}
}
