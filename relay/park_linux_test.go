package relay

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// parkedStream runs one stream whose client socket the relay may park
// (Park set), to its end: the client has read the whole body when it
// returns, with what Done got. resumed gets each connection Park is
// given.
func parkedStream(t *testing.T, r *Relay, idle time.Duration) (m *moved, d movedDone, resumed chan net.Conn) {
	t.Helper()
	resumed = make(chan net.Conn, 1)
	m = addMoved(t, r, func(c net.Conn) { resumed <- c }, idle)
	body := "5\r\nhello\r\n0\r\n\r\n"
	if _, err := m.engine.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	readExactly(t, m.client, body)
	return m, m.ended(t), resumed
}

// parkedCount is the number of clients the loop keeps parked, read on
// the loop.
func parkedCount(t *testing.T, l *loop) int {
	t.Helper()
	n := make(chan int, 1)
	if err := l.queue(func() { n <- len(l.parked) }); err != nil {
		t.Fatal(err)
	}
	l.wake()
	select {
	case v := <-n:
		return v
	case <-time.After(wait):
		t.Fatal("the loop did not run the count")
		return -1
	}
}

// TestParkedClientResumes: with Park set, a stream that ended keeps its
// client's socket in the loop (Done says Parked, the socket not moved
// back); the client's next request moves it back and hands the working
// connection to Park.
func TestParkedClientResumes(t *testing.T) {
	r, _ := startRelay(t, 1)
	m, d, resumed := parkedStream(t, r, time.Minute)
	client, cm := m.client, m.cm
	if !d.res.Ended || !d.res.Parked || d.clientIn != 0 {
		t.Fatalf("Done: %+v with %d moves back; want Ended and Parked, the client's socket kept", d.res, d.clientIn)
	}
	if n, gauge := parkedCount(t, r.loops[0]), r.Parked(); n != 1 || gauge != 1 {
		t.Fatalf("%d clients parked (Parked %d), want 1", n, gauge)
	}
	if _, err := client.Write([]byte("GET /next")); err != nil {
		t.Fatal(err)
	}
	var c net.Conn
	select {
	case c = <-resumed:
	case <-time.After(wait):
		t.Fatal("the client's next request did not resume its connection")
	}
	if cm.in != 1 || c != cm.c {
		t.Fatalf("Park got %v after %d moves back; want the connection moved back once", c, cm.in)
	}
	readExactly(t, c, "GET /next")
	answerResumed(t, r, c, client, "HTTP/1.1 200")
}

// answerResumed writes answer through resumed, a connection the relay
// gave back, checks that the client reads it, and that the relay keeps
// no client parked or waiting since.
func answerResumed(t *testing.T, r *Relay, resumed, client net.Conn, answer string) {
	t.Helper()
	if _, err := resumed.Write([]byte(answer)); err != nil {
		t.Fatal(err)
	}
	readExactly(t, client, answer)
	if n, gauge := parkedCount(t, r.loops[0]), r.Parked(); n != 0 || gauge != 0 {
		t.Errorf("%d clients parked or waiting after the resume (Parked %d), want 0", n, gauge)
	}
}

// TestParkedClientClosed: a parked client that hangs up, stays idle past
// ParkIdle, or outlives the relay has its socket closed by the loop, and
// Park is never called.
func TestParkedClientClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration
		end  func(t *testing.T, client net.Conn, stop func())
	}{
		{"hangs up", time.Minute, func(_ *testing.T, client net.Conn, _ func()) { _ = client.Close() }},
		{"idle", 50 * time.Millisecond, func(t *testing.T, client net.Conn, _ func()) { wantEOF(t, client) }},
		{"relay stopped", time.Minute, func(t *testing.T, client net.Conn, stop func()) { stop(); wantEOF(t, client) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, stop := startRelay(t, 1)
			m, d, resumed := parkedStream(t, r, tc.idle)
			if !d.res.Parked {
				t.Fatalf("Done: %+v, want Parked", d.res)
			}
			tc.end(t, m.client, sync.OnceFunc(stop))
			if tc.name != "relay stopped" {
				waitNoneParked(t, r)
			}
			select {
			case c := <-resumed:
				t.Errorf("Park got %v for a client that sent nothing", c)
			default:
			}
			if n := r.Parked(); n != 0 {
				t.Errorf("Parked = %d once the client was closed, want 0", n)
			}
		})
	}
}

// TestNotParkedWithoutPark: a stream without Park gives its client's
// socket back before Done, as before.
func TestNotParkedWithoutPark(t *testing.T) {
	r, _ := startRelay(t, 1)
	m := addMoved(t, r, nil, 0)
	if _, err := m.engine.Write([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if d := m.ended(t); d.res.Parked || d.clientIn != 1 {
		t.Errorf("Done: %+v after %d moves back; want the socket given back, not parked", d.res, d.clientIn)
	}
}

// wantEOF waits for the relay to close the client's socket: the client
// reads the end of its connection.
func wantEOF(t *testing.T, client net.Conn) {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(wait))
	var b [1]byte
	if n, err := client.Read(b[:]); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("the client read %d bytes, %v; want its connection closed", n, err)
	}
}
