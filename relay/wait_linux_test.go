package relay

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/internal/loopback"
)

// waiting is a client waiting in a relay (Relay.Wait): the test's end,
// the Mover of the relay's end, and the connections Resume got, with the
// bytes ahead of them.
type waiting struct {
	client  *net.TCPConn
	m       *testMover
	resumed chan resumedConn
}

type resumedConn struct {
	c     net.Conn
	ahead []byte
}

// answerPings answers each request "ping N" with "pong N", and leaves
// anything else to Resume.
func answerPings(req, out []byte) ([]byte, bool) {
	n, ok := bytes.CutPrefix(req, []byte("ping "))
	if !ok {
		return out, false
	}
	return append(append(out, "pong "...), n...), true
}

// startWaiting has a new connection wait in r with answer and idle.
func startWaiting(t *testing.T, r *Relay, answer func(req, out []byte) ([]byte, bool), idle time.Duration) *waiting {
	t.Helper()
	w := &waiting{resumed: make(chan resumedConn, 1)}
	var relayEnd *net.TCPConn
	w.client, relayEnd = loopback.Pair(t)
	w.m = newTestMover(t, relayEnd, nil)
	err := r.Wait(&Waiter{Mover: w.m, Answer: answer, Idle: idle,
		Resume: func(c net.Conn, ahead []byte) { w.resumed <- resumedConn{c, ahead} }})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWaiterAnswersThenResumes: the loop answers a waiting client's
// requests that Answer takes, on the socket it moved out, and gives the
// connection back, moved in, with the bytes of the first it leaves.
func TestWaiterAnswersThenResumes(t *testing.T) {
	r, _ := startRelay(t, 1)
	w := startWaiting(t, r, answerPings, time.Minute)
	for i := range 3 {
		if _, err := w.client.Write([]byte("ping " + string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
		readExactly(t, w.client, "pong "+string(rune('a'+i)))
	}
	if n, gauge := parkedCount(t, r.loops[0]), r.Parked(); n != 1 || gauge != 1 || w.m.out != 1 || w.m.in != 0 {
		t.Fatalf("%d waiting (Parked %d), moved out %d, in %d; want 1 waiting, moved out once", n, gauge, w.m.out, w.m.in)
	}
	if _, err := w.client.Write([]byte("GET /served")); err != nil {
		t.Fatal(err)
	}
	var got resumedConn
	select {
	case got = <-w.resumed:
	case <-time.After(wait):
		t.Fatal("a request Answer left did not resume the connection")
	}
	if got.c != w.m.c || w.m.in != 1 || string(got.ahead) != "GET /served" {
		t.Fatalf("Resume got %v with %q after %d moves in; want the connection moved in once, with the request", got.c, got.ahead, w.m.in)
	}
	answerResumed(t, r, got.c, w.client, "answered")
}

// TestWaiterClosed: a waiting client that hangs up, half-closes after a
// request, stays idle past Idle, or outlives the relay has its socket
// closed by the loop; Resume is never called.
func TestWaiterClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration
		end  func(t *testing.T, client *net.TCPConn, stop func())
	}{
		{"hangs up", time.Minute, func(_ *testing.T, client *net.TCPConn, _ func()) { _ = client.Close() }},
		{"half-closes after a request", time.Minute, func(t *testing.T, client *net.TCPConn, _ func()) {
			if _, err := client.Write([]byte("ping last")); err != nil {
				t.Fatal(err)
			}
			if err := client.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			readExactly(t, client, "pong last")
			wantEOF(t, client)
		}},
		{"idle", 50 * time.Millisecond, func(t *testing.T, client *net.TCPConn, _ func()) { wantEOF(t, client) }},
		{"relay stopped", time.Minute, func(t *testing.T, client *net.TCPConn, stop func()) { stop(); wantEOF(t, client) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, stop := startRelay(t, 1)
			w := startWaiting(t, r, answerPings, tc.idle)
			tc.end(t, w.client, stop)
			if tc.name != "relay stopped" {
				waitNoneParked(t, r)
			}
			select {
			case c := <-w.resumed:
				t.Errorf("Resume got %v for a client that asked for nothing Answer left", c.c)
			default:
			}
			if n := r.Parked(); n != 0 {
				t.Errorf("Parked = %d once the client was closed, want 0", n)
			}
		})
	}
}

// TestWaiterIdleRenewed: each answer renews a waiting client's idle
// time: a client that asks more often than Idle stays, and is closed
// once it stops asking.
func TestWaiterIdleRenewed(t *testing.T) {
	r, _ := startRelay(t, 1)
	const idle = 200 * time.Millisecond
	w := startWaiting(t, r, answerPings, idle)
	start := time.Now()
	for time.Since(start) < 3*idle {
		if _, err := w.client.Write([]byte("ping x")); err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		readExactly(t, w.client, "pong x")
		time.Sleep(idle / 4)
	}
	wantEOF(t, w.client)
	if took := time.Since(start); took < 3*idle+idle/2 {
		t.Errorf("closed %v after the first request, before its idle time after the last", took)
	}
	waitNoneParked(t, r)
}

// TestWaiterAnswerNotTakenWhole: an answer the socket does not take at
// once is written as the client reads, whole and in order, before the
// next request is read.
func TestWaiterAnswerNotTakenWhole(t *testing.T) {
	r, _ := startRelay(t, 1)
	big := strings.Repeat("z", 16<<20) // past any loopback socket's buffers
	w := startWaiting(t, r, func(req, out []byte) ([]byte, bool) {
		if string(req) == "big" {
			return append(out, big...), true
		}
		return answerPings(req, out)
	}, time.Minute)
	if _, err := w.client.Write([]byte("big")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the loop writes what the socket takes, and waits
	readExactly(t, w.client, big)
	if _, err := w.client.Write([]byte("ping after")); err != nil {
		t.Fatal(err)
	}
	readExactly(t, w.client, "pong after")
}

// TestWaitFails: Wait fails, the connection as it was, when its socket
// cannot be moved out; after the relay stopped, it fails with
// ErrShutdown, and the connection is closed.
func TestWaitFails(t *testing.T) {
	r, stop := startRelay(t, 1)
	client, relayEnd := loopback.Pair(t)
	errNoMove := errors.New("no move")
	err := r.Wait(&Waiter{Mover: newTestMover(t, relayEnd, errNoMove), Answer: answerPings, Resume: func(net.Conn, []byte) {}})
	if !errors.Is(err, errNoMove) {
		t.Fatalf("Wait with a failing Mover: %v, want %v", err, errNoMove)
	}
	if _, err := relayEnd.Write([]byte("kept")); err != nil {
		t.Fatalf("the connection after the failed Wait: %v", err)
	}
	readExactly(t, client, "kept")
	stop()
	m := newTestMover(t, relayEnd, nil)
	if err := r.Wait(&Waiter{Mover: m, Answer: answerPings, Resume: func(net.Conn, []byte) {}}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Wait after the relay stopped: %v, want ErrShutdown", err)
	}
	wantEOF(t, client)
}

// waitNoneParked waits for the first loop to keep no client, parked or
// waiting.
func waitNoneParked(t *testing.T, r *Relay) {
	t.Helper()
	waitFor(t, "the kept client closed", func() bool { return parkedCount(t, r.loops[0]) == 0 })
}

// TestWaitersFillALoopFirst: waiting clients go to the first loop, whose
// work under a storm is their refusals, until it keeps spillStreams of
// them; each is answered on its own, and a waiter gone is no longer
// counted.
func TestWaitersFillALoopFirst(t *testing.T) {
	r, _ := startRelay(t, 2)
	a := startWaiting(t, r, answerPings, time.Minute)
	b := startWaiting(t, r, answerPings, time.Minute)
	for _, w := range []*waiting{a, b} {
		if _, err := w.client.Write([]byte("ping s")); err != nil {
			t.Fatal(err)
		}
		readExactly(t, w.client, "pong s")
	}
	if n0, n1 := parkedCount(t, r.loops[0]), parkedCount(t, r.loops[1]); n0 != 2 || n1 != 0 {
		t.Errorf("waiting clients on the loops: %d and %d, want both on the first", n0, n1)
	}
	if n := r.loops[0].waiting.Load(); n != 2 {
		t.Errorf("the first loop counts %d waiting, want 2", n)
	}
	_ = b.client.Close()
	waitFor(t, "the hung-up waiter uncounted", func() bool { return r.loops[0].waiting.Load() == 1 })

	r.loops[0].waiting.Add(spillStreams) // as if it kept spillStreams more
	c := startWaiting(t, r, answerPings, time.Minute)
	if _, err := c.client.Write([]byte("ping c")); err != nil {
		t.Fatal(err)
	}
	readExactly(t, c.client, "pong c")
	if n := parkedCount(t, r.loops[1]); n != 1 {
		t.Errorf("the second loop keeps %d clients past the first's spill, want 1", n)
	}
	r.loops[0].waiting.Add(-spillStreams)
}

// waitFor waits, bounded, for cond to hold.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: wait, Every: 5 * time.Millisecond}.True(t, what, cond)
}
