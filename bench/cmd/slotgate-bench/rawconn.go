package main

import (
	"context"
	"fmt"
	"net"
	"time"
)

// openRequests opens n connections to addr, one after the other, and sends
// one small JSON POST for path on each, without reading any answer: the
// requests then sit in the proxy (in a slot or its queue) for as long as
// the connections stay open. The memory scenario and the killed clients
// use it; with the http package each request would need a goroutine
// blocked in Do, and the moment a request was written would be unknown.
func openRequests(ctx context.Context, addr, path string, n int) ([]net.Conn, error) {
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, addr, len(reqBody), reqBody)
	d := net.Dialer{Timeout: 5 * time.Second}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connection %d of %d: %w", len(conns)+1, n, err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // a late write fails
		if _, err := c.Write(req); err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("request %d of %d: %w", len(conns), n, err)
		}
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
