package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestEngineBodyClosedEarlyDoesNotDrain: closing an engine answer before
// its end, with the request's context still live (ReverseProxy does so
// when writing to the client fails), returns at once and closes the engine
// connection; it does not read the rest of an endless stream.
func TestEngineBodyClosedEarlyDoesNotDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	engineSawClose := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := io.WriteString(c, "d\r\ndata: token\n\n\r\n"); err != nil {
				close(engineSawClose)
				return
			}
		}
	}()
	tr := newDirectTransport(http.DefaultTransport, ln.Addr().String(), 4)
	u := &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/v1/completions"}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: token\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() { _ = resp.Body.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close of an unfinished stream did not return: it drains the stream")
	}
	select {
	case <-engineSawClose:
	case <-time.After(5 * time.Second):
		t.Fatal("the engine never saw the connection closed")
	}
	if n := len(tr.idle); n != 0 {
		t.Errorf("%d connections back in the pool, want none", n)
	}
}

// TestWithPort: an engine URL without a port is dialled on port 80, as
// net/http's transport does.
func TestWithPort(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8000": "127.0.0.1:8000",
		"engine":         "engine:80",
		"[::1]:8000":     "[::1]:8000",
		"[::1]":          "[::1]:80",
	} {
		if got := withPort(in, "80"); got != want {
			t.Errorf("withPort(%q) = %q, want %q", in, got, want)
		}
	}
}
