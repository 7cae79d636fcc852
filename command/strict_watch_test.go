package command

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestEarlyClientWatch: a request's watch sees its client leave, takes a
// pipelined request as the client still there (kept for the next read,
// even when the client then closes its side), stops when Unwatch asks,
// and never starts once Unwatch has run.
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
			var gone atomic.Int32
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				ec.Watch(func() { gone.Add(1) })
			}()
			if tc.client != nil {
				tc.client(client)
			}
			if tc.wantGone || tc.wantKept != "" {
				select {
				case <-watched: // the watch ended by itself
				case <-time.After(10 * time.Second):
					t.Fatal("the watch did not end")
				}
			}
			if got := ec.Unwatch(); got != tc.wantGone || (gone.Load() == 1) != tc.wantGone {
				t.Errorf("Unwatch = %v, gone ran %d times; want %v", got, gone.Load(), tc.wantGone)
			}
			<-watched
			if string(sc.in) != tc.wantKept {
				t.Errorf("kept %q for the next read, want %q", sc.in, tc.wantKept)
			}
		})
	}
	t.Run("unwatched first", func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		ec := &earlyClient{c: &strictConn{Conn: server}}
		if ec.Unwatch() {
			t.Error("Unwatch before any watch says the client left")
		}
		done := make(chan struct{})
		go func() { ec.Watch(func() { t.Error("a watch started after Unwatch") }); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Watch after Unwatch waited")
		}
	})
}
