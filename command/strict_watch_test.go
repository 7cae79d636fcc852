package command

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cutCount counts a request's cuts (proxy.Cutter).
type cutCount struct{ n atomic.Int32 }

func (c *cutCount) Now() { c.n.Add(1) }

// started waits until ec's watch has started and returns the channel its
// end closes.
func started(t *testing.T, ec *earlyClient) chan struct{} {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ec.mu.Lock()
		st, done := ec.state, ec.done
		ec.mu.Unlock()
		if st == watching {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch never started")
		}
	}
}

// TestEarlyClientWatch: a request's watch starts once its time has
// passed, sees its client leave, takes a pipelined request as the client
// still there (kept for the next read, even when the client then closes
// its side), and stops when Unwatch asks; the connection's next request
// arms it again.
func TestEarlyClientWatch(t *testing.T) {
	tests := []struct {
		name     string
		client   func(net.Conn) // what the client does while watched; nil: nothing
		wantGone bool
		wantKept string
	}{
		{name: "client leaves", client: func(c net.Conn) { _ = c.Close() }, wantGone: true},
		{name: "pipelined, then closed", client: func(c net.Conn) {
			_, _ = c.Write([]byte("GET /next HTTP/1.1\r\n"))
			_ = c.Close()
		}, wantKept: "GET /next HTTP/1.1\r\n"},
		{name: "client stays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			sc := &strictConn{Conn: server, earlyState: earlyState{idle: time.Minute}}
			ec := &earlyClient{c: sc}
			var cut cutCount
			ec.Watch(time.Millisecond, &cut)
			done := started(t, ec)
			if tc.client != nil {
				tc.client(client)
			}
			if tc.wantGone || tc.wantKept != "" {
				select {
				case <-done: // the watch ended by itself
				case <-time.After(10 * time.Second):
					t.Fatal("the watch did not end")
				}
			}
			if got := ec.Unwatch(); got != tc.wantGone || (cut.n.Load() == 1) != tc.wantGone {
				t.Errorf("Unwatch = %v, cut %d times; want %v", got, cut.n.Load(), tc.wantGone)
			}
			if string(sc.in) != tc.wantKept {
				t.Errorf("kept %q for the next read, want %q", sc.in, tc.wantKept)
			}
			if tc.client != nil {
				return
			}
			// The connection's next request: armed again, watched again.
			var next cutCount
			ec.Watch(time.Millisecond, &next)
			started(t, ec)
			if ec.Unwatch() || next.n.Load() != 0 || cut.n.Load() != 0 {
				t.Errorf("the next request's watch: gone, or cut (%d, %d)", next.n.Load(), cut.n.Load())
			}
		})
	}
	t.Run("unwatched before its time", func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		ec := &earlyClient{c: &strictConn{Conn: server}}
		var cut cutCount
		ec.Watch(time.Hour, &cut)
		if ec.Unwatch() {
			t.Error("Unwatch before the watch started says the client left")
		}
		fired := make(chan struct{})
		go func() { ec.fire(); close(fired) }() // a fire too late for Stop: it must start nothing
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			t.Fatal("a late fire after Unwatch started a watch")
		}
		ec.mu.Lock()
		st := ec.state
		ec.mu.Unlock()
		if st != watchOver || cut.n.Load() != 0 {
			t.Errorf("a late fire after Unwatch: state %d, cut %d times; want no watch", st, cut.n.Load())
		}
	})
	t.Run("a late fire watches the current request", func(t *testing.T) {
		client, server := net.Pipe()
		ec := &earlyClient{c: &strictConn{Conn: server}}
		var first, second cutCount
		ec.Watch(time.Hour, &first)
		ec.Unwatch()
		ec.Watch(time.Hour, &second)
		go ec.fire() // the first request's fire, late: the second is armed
		started(t, ec)
		_ = client.Close()
		if !ec.Unwatch() || second.n.Load() != 1 || first.n.Load() != 0 {
			t.Errorf("cuts: first %d, second %d; want the second's only", first.n.Load(), second.n.Load())
		}
	})
	t.Run("unwatched as the watch starts", func(t *testing.T) {
		// The watch lifts the read deadline as it starts; an Unwatch
		// that came just before must still cut its read, not wait for a
		// read with no deadline (the client's next bytes, or its leaving).
		client, server := net.Pipe()
		defer client.Close()
		slow := &slowLift{Conn: server, entered: make(chan struct{}), lift: make(chan struct{})}
		ec := &earlyClient{c: &strictConn{Conn: slow}}
		var cut cutCount
		ec.Watch(time.Millisecond, &cut)
		<-slow.entered // the watch is starting, its deadline not yet lifted
		unwatched := make(chan bool, 1)
		go func() { unwatched <- ec.Unwatch() }()
		time.Sleep(20 * time.Millisecond) // for Unwatch to get as far as it can
		close(slow.lift)
		select {
		case gone := <-unwatched:
			if gone || cut.n.Load() != 0 {
				t.Errorf("Unwatch = %v, cut %d times; want the client still there", gone, cut.n.Load())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Unwatch waited for a watch whose read had no deadline")
		}
	})
}

// slowLift is a connection whose read deadline, lifted the first time,
// is lifted only once the test says so (lift), having told it the lift
// began (entered).
type slowLift struct {
	net.Conn
	entered, lift chan struct{}
	once          sync.Once
}

func (c *slowLift) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		c.once.Do(func() {
			close(c.entered)
			<-c.lift
		})
	}
	return c.Conn.SetReadDeadline(t)
}
