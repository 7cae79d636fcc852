package command

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
	"github.com/slotgate/slotgate/internal/testlog"
	"github.com/slotgate/slotgate/relay"
)

// TestShutdownWaitsForRelayedStreams: a drain waits for the streams the
// relay still carries, though they hold no slot (a relayed answer's slot
// goes back as the relay reads the engine's end, before a slow client
// has it): a client that takes its answer during the drain gets all of
// it, and slotgate exits 0; one that never takes it is cut at the
// shutdown timeout, which the log names, and slotgate exits 1.
func TestShutdownWaitsForRelayedStreams(t *testing.T) {
	tests := []struct {
		name     string
		reads    bool
		timeout  string // --shutdown-timeout: ample for a reader, short for the cut
		wantCode int
	}{
		{name: "the client reads during the drain", reads: true, timeout: "30s", wantCode: exitOK},
		{name: "the client never reads", reads: false, timeout: "2s", wantCode: exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer eng.Close()
			out := testlog.New()
			a := testApp(t, eng.URL, out, "--stream-relay", "epoll", "--drain-delay", "0s", "--shutdown-timeout", tt.timeout)
			ls, err := a.listen()
			if err != nil {
				t.Fatal(err)
			}
			signals := make(chan os.Signal, 1)
			exited := make(chan int, 1)
			go func() { exited <- a.serveOn(ls, signals) }()

			body, reader, ended := relayWithoutSlot(t, a.relay)
			signals <- syscall.SIGTERM
			if tt.reads {
				out.WaitFor(t, "new requests are now refused", 30*time.Second)
				got, err := io.ReadAll(reader)
				if err != nil || !bytes.Equal(got, body) {
					t.Errorf("the client read %d bytes of %d (%v) through the drain", len(got), len(body), err)
				}
			}
			select {
			case code := <-exited:
				if code != tt.wantCode {
					t.Errorf("exit status %d, want %d", code, tt.wantCode)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("serveOn did not return within 60s of SIGTERM")
			}
			if res := <-ended; res.Ended != tt.reads {
				t.Errorf("stream ended %+v", res)
			}
			cut := strings.Contains(out.String(), `"msg":"shutdown timeout: cutting requests still running"`) &&
				strings.Contains(out.String(), `"relayed":1`)
			if cut == tt.reads {
				t.Errorf("the log says the relayed stream was cut: %t, want %t:\n%s", cut, !tt.reads, out.String())
			}
		})
	}
}

// relayWithoutSlot has r carry a 4 MiB chunked answer, as a relayed
// stream whose slot went back: no gate knows of it. The client's end
// holds small buffers, so the stream stays open until reader takes the
// body. It returns the body as the client gets it (the relay passes the
// chunks' framing on), the client's reader, and the stream's result once
// it ends.
func relayWithoutSlot(t *testing.T, r *relay.Relay) (body []byte, reader net.Conn, ended <-chan relay.Result) {
	t.Helper()
	engineFar, engineNear := loopback.Pair(t)
	clientNear, clientFar := loopback.Pair(t)
	for _, c := range []*net.TCPConn{clientNear, clientFar} {
		_ = c.SetWriteBuffer(64 << 10)
		_ = c.SetReadBuffer(64 << 10)
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var framed bytes.Buffer
	for range 64 {
		fmt.Fprintf(&framed, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	framed.WriteString("0\r\n\r\n")
	body = framed.Bytes()
	go func() { _, _ = engineFar.Write(body) }() // ends with the relay's read or the test's close
	done := make(chan relay.Result, 1)
	s := &relay.Stream{Engine: engineNear, Client: clientNear, OnData: func([]byte) {}, Done: func(res relay.Result) {
		_ = clientNear.Close() // the client's answer ends with its connection
		done <- res
	}}
	if err := r.Add(s); err != nil {
		t.Fatal(err)
	}
	return body, clientFar, done
}
