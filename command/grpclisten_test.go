package command

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestConnFeedTakesTurns: a connection goes to a view that asks; a closed
// view's Accept ends while the listener stays open for the next view;
// close closes the listener and ends every view's Accept.
func TestConnFeedTakesTurns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	feed := newConnFeed(ln)
	first, second := feed.view(), feed.view()
	if first.Addr().String() != ln.Addr().String() {
		t.Errorf("view address %v, want the listener's %v", first.Addr(), ln.Addr())
	}
	dialAccept(t, ln.Addr().String(), first)

	firstDone := make(chan error, 1)
	go func() { _, err := first.Accept(); firstDone <- err }()
	_ = first.Close()
	if err := <-firstDone; !errors.Is(err, net.ErrClosed) {
		t.Errorf("a closed view's Accept: %v, want net.ErrClosed", err)
	}
	if _, err := first.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	dialAccept(t, ln.Addr().String(), second) // the listener is still open

	secondDone := make(chan error, 1)
	go func() { _, err := second.Accept(); secondDone <- err }()
	feed.close()
	select {
	case err := <-secondDone:
		if err == nil {
			t.Error("Accept after the feed closed returned a connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still blocked after the feed closed")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after the feed closed")
	}
}

// TestConnFeedClosedWithConnectionInHand: a feed closed while it holds a
// connection no view took closes that connection, and a view's Accept
// then fails: it never returns no connection and no error, which would
// leave a server with nothing to serve and nothing to stop it.
func TestConnFeedClosedWithConnectionInHand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	feed := newConnFeed(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	feed.close()
	if got, err := feed.view().Accept(); got != nil || err == nil {
		t.Errorf("Accept after the feed closed: %v, %v; want no connection and an error", got, err)
	}
}

// dialAccept dials addr and checks that v accepts that connection.
func dialAccept(t *testing.T, addr string, v net.Listener) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := v.Accept()
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	defer got.Close()
	if got.RemoteAddr().String() != c.LocalAddr().String() {
		t.Errorf("accepted %v, want the connection from %v", got.RemoteAddr(), c.LocalAddr())
	}
}
