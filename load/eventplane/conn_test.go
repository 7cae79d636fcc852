package eventplane

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestConnAnswersPingAndSurfacesErr runs the client against a scripted
// server over net.Pipe: the handshake, a PING from the server, then an
// -ERR and the server closing, which the connection reports.
func TestConnAnswersPingAndSurfacesErr(t *testing.T) {
	client, server := net.Pipe()
	scriptDone := make(chan string, 1)
	go func() {
		defer server.Close()
		r := bufio.NewReader(server)
		io.WriteString(server, `INFO {"max_payload":64}`+"\r\n")
		connect, _ := r.ReadString('\n')
		ping, _ := r.ReadString('\n')
		io.WriteString(server, "+OK\r\nPONG\r\nPING\r\n")
		pong, _ := r.ReadString('\n')
		io.WriteString(server, "-ERR 'Stale Connection'\r\n")
		scriptDone <- connect + ping + pong
	}()
	u, _ := url.Parse("nats://alice:s3cret@nats.test:4222")
	dialer := func(context.Context, string, string) (net.Conn, error) { return client, nil }
	c, err := dial(t.Context(), dialer, u, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if err := c.publish("s", make([]byte, 65)); err == nil || !strings.Contains(err.Error(), "max_payload 64") {
		t.Errorf("a message over max_payload: %v, want an error naming it", err)
	}
	got := <-scriptDone
	for _, want := range []string{`"user":"alice"`, `"pass":"s3cret"`, `"verbose":false`, `"pedantic":false`, "PING\r\n", "PONG\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("client sent %q, missing %q", got, want)
		}
	}
	<-c.done
	if c.err == nil || !strings.Contains(c.err.Error(), "Stale Connection") {
		t.Errorf("connection ended with %v, want the server's -ERR", c.err)
	}
}

func TestConnectLineCredentials(t *testing.T) {
	tests := []struct{ url, want, absent string }{
		{"nats://h:1", `"name":"slotgate"`, `"user"`},
		{"nats://tok@h:1", `"auth_token":"tok"`, `"user"`},
		{"nats://u:p@h:1", `"user":"u","pass":"p"`, `"auth_token"`},
	}
	for _, tt := range tests {
		u, err := ParseURL(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		line := string(connectLine(u))
		if !strings.HasPrefix(line, "CONNECT {") || !strings.HasSuffix(line, "}\r\n") ||
			!strings.Contains(line, tt.want) || strings.Contains(line, tt.absent) {
			t.Errorf("%s: %q", tt.url, line)
		}
	}
}

func TestHandshakeFailures(t *testing.T) {
	// server is what the server sends first; afterConnect, what it sends
	// once it has read the client's CONNECT and PING, as a real server
	// answers a bad login.
	tests := []struct{ name, server, afterConnect, want string }{
		{"auth", `INFO {}` + "\r\n", "-ERR 'Authorization Violation'\r\n", "Authorization Violation"},
		{"tls", `INFO {"tls_required":true}` + "\r\n", "", "TLS"},
		{"not nats", "HTTP/1.1 400 Bad Request\r\n", "", "unexpected line"},
		{"bad info", "INFO {\r\n", "", "INFO"},
		{"closed", "", "", "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				io.WriteString(server, tt.server)
				if tt.afterConnect == "" {
					return
				}
				r := bufio.NewReader(server)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line == "PING\r\n" {
						break
					}
				}
				io.WriteString(server, tt.afterConnect)
			}()
			u, _ := url.Parse("nats://nats.test:4222")
			dialer := func(context.Context, string, string) (net.Conn, error) { return client, nil }
			_, err := dial(t.Context(), dialer, u, 5*time.Second, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("dial: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
