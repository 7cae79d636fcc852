package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/loopback"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// startRelay runs a relay of n loops until the test ends; stop ends it
// sooner and waits for Run to return, failing past wait.
func startRelay(t *testing.T, n int) (r *Relay, stop func()) {
	t.Helper()
	r, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	return r, runRelay(t, r)
}

// runRelay runs r until the test ends; stop ends it sooner and waits for
// Run to return, failing past wait.
func runRelay(t *testing.T, r *Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	stop = func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(wait):
			t.Fatal("Run did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// harness is a running relay with one stream: the engine's end the test
// writes to, the client's end it reads from.
type harness struct {
	engine, client net.Conn // the test's ends
	done           chan Result
	mu             sync.Mutex
	data           []byte // what OnData was given
}

func newHarness(t *testing.T, pending string) (*harness, *Relay) {
	t.Helper()
	r, _ := startRelay(t, 1)
	return harnessOn(t, r, pending), r
}

// harnessOn adds a stream to r, the engine having sent pending.
func harnessOn(t *testing.T, r *Relay, pending string) *harness {
	t.Helper()
	h := &harness{done: make(chan Result, 1)}
	var relayEngine, relayClient net.Conn
	h.engine, relayEngine = loopback.Pair(t)
	h.client, relayClient = loopback.Pair(t)
	err := r.Add(&Stream{Engine: relayEngine, Pending: []byte(pending), Client: relayClient,
		OnData: func(p []byte) { h.mu.Lock(); h.data = append(h.data, p...); h.mu.Unlock() },
		Done:   func(res Result) { h.done <- res }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) result(t *testing.T) Result {
	t.Helper()
	select {
	case res := <-h.done:
		return res
	case <-time.After(wait):
		t.Fatal("the stream did not end")
		return Result{}
	}
}

// readN reads n bytes from the client's end.
func (h *harness) readN(t *testing.T, n int) []byte {
	t.Helper()
	_ = h.client.SetReadDeadline(time.Now().Add(wait))
	b := make([]byte, n)
	if _, err := io.ReadFull(h.client, b); err != nil {
		t.Fatalf("read %d bytes from the relay: %v", n, err)
	}
	return b
}

func TestRelayCarriesAStream(t *testing.T) {
	pending := "6\r\ndata: \r\n"
	h, r := newHarness(t, pending)
	sent := pending
	for i := range 50 {
		ev := fmt.Sprintf("data: {\"n\":%d}\n\n", i)
		chunk := fmt.Sprintf("%x\r\n%s\r\n", len(ev), ev)
		if _, err := h.engine.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
		sent += chunk
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // some events alone, some together
		}
	}
	if _, err := h.engine.Write([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	sent += "0\r\n\r\n"
	if got := h.readN(t, len(sent)); string(got) != sent {
		t.Fatalf("the client got %q, want %q", got, sent)
	}
	res := h.result(t)
	if !res.Ended || !res.EngineReusable || res.ClientGone || res.Err != nil || res.Sent != int64(len(sent)) || res.FirstWrite.IsZero() {
		t.Errorf("result = %+v, want ended, reusable, %d bytes sent", res, len(sent))
	}
	want := "data: "
	for i := range 50 {
		want += fmt.Sprintf("data: {\"n\":%d}\n\n", i)
	}
	if string(h.data) != want {
		t.Errorf("OnData got %q, want %q", h.data, want)
	}
	if r.Open() != 0 {
		t.Errorf("Open() = %d after the end, want 0", r.Open())
	}
}

func TestRelayEnds(t *testing.T) {
	tests := []struct {
		name string
		act  func(h *harness)
		// want
		ended, reusable, gone bool
		err                   error
	}{
		{name: "client hangs up", act: func(h *harness) { h.client.Close() }, gone: true, err: errClientClosed},
		{name: "engine closes early", act: func(h *harness) { h.engine.Write([]byte("3\r\nab")); h.engine.Close() }, err: errEngineEOF},
		{name: "engine breaks the framing", act: func(h *harness) { h.engine.Write([]byte("zz\r\n")) }, err: errChunked},
		{name: "engine sends more than the answer", act: func(h *harness) { h.engine.Write([]byte("1\r\nx\r\n0\r\n\r\nHTTP/1.1")) },
			ended: true},
		{name: "ends in the first bytes", act: func(*harness) {}, ended: true, reusable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pending := "1\r\na\r\n"
			if tt.name == "ends in the first bytes" {
				pending += "0\r\n\r\n"
			}
			h, _ := newHarness(t, pending)
			tt.act(h)
			res := h.result(t)
			if res.Ended != tt.ended || res.EngineReusable != tt.reusable || res.ClientGone != tt.gone ||
				(tt.err == nil) != (res.Err == nil) || (tt.err != nil && !errors.Is(res.Err, tt.err)) {
				t.Errorf("result = %+v, want ended %v, reusable %v, client gone %v, err %v", res, tt.ended, tt.reusable, tt.gone, tt.err)
			}
		})
	}
}

// TestRelayBackPressure sends more than the sockets hold to a client that
// reads late and slowly: nothing is lost, and the engine is read only as
// fast as the client takes.
func TestRelayBackPressure(t *testing.T) {
	h, _ := newHarness(t, "")
	const chunks, size = 256, 32 << 10
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var want bytes.Buffer
	go func() {
		for range chunks {
			fmt.Fprintf(h.engine, "%x\r\n%s\r\n", size, payload)
		}
		_, _ = h.engine.Write([]byte("0\r\n\r\n"))
	}()
	for range chunks {
		fmt.Fprintf(&want, "%x\r\n%s\r\n", size, payload)
	}
	want.WriteString("0\r\n\r\n")
	time.Sleep(50 * time.Millisecond) // the sockets fill up
	got := h.readN(t, want.Len())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the client got other bytes than the engine sent")
	}
	if res := h.result(t); !res.Ended || res.Sent != int64(want.Len()) {
		t.Errorf("result = %+v, want ended with %d bytes sent", res, want.Len())
	}
	if len(h.data) != chunks*size {
		t.Errorf("OnData got %d bytes, want %d", len(h.data), chunks*size)
	}
}

// TestRelayShutdown ends the streams still open when Run's context ends.
func TestRelayShutdown(t *testing.T) {
	r, stop := startRelay(t, 2)
	done := make(chan Result, 3)
	for range 3 {
		_, e := loopback.Pair(t)
		_, c := loopback.Pair(t)
		if err := r.Add(&Stream{Engine: e, Client: c, OnData: func([]byte) {}, Done: func(res Result) { done <- res }}); err != nil {
			t.Fatal(err)
		}
	}
	if r.Open() != 3 {
		t.Errorf("Open() = %d, want 3", r.Open())
	}
	stop()
	for range 3 {
		if res := <-done; !errors.Is(res.Err, ErrShutdown) || res.Ended {
			t.Errorf("result = %+v, want ErrShutdown", res)
		}
	}
	_, e := loopback.Pair(t)
	_, c := loopback.Pair(t)
	if err := r.Add(&Stream{Engine: e, Client: c, Done: func(Result) { t.Error("Done called for a stream never added") }}); !errors.Is(err, ErrShutdown) {
		t.Errorf("Add after the shutdown: %v, want ErrShutdown", err)
	}
}

func TestAddNeedsSockets(t *testing.T) {
	r, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := r.Add(&Stream{Engine: a, Client: b}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Add of a net.Pipe: %v, want ErrUnsupported", err)
	}
	// A blocking socket would block the loop's raw calls.
	e, c := loopback.Pair(t)
	setBlocking := func(on bool) {
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var set error
		if err := rc.Control(func(fd uintptr) { set = syscall.SetNonblock(int(fd), !on) }); err != nil || set != nil {
			t.Fatal(err, set)
		}
	}
	setBlocking(true)
	defer setBlocking(false)
	if err := r.Add(&Stream{Engine: e, Client: c}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Add of a blocking socket: %v, want ErrUnsupported", err)
	}
}

// TestRelayEngineResetsWhileClientLags: an engine that resets its
// connection while the client has not taken what was read ends the
// stream at once, cut: the reset is told whatever the socket's event
// mask, and the loop must not wait on the client meanwhile.
func TestRelayEngineResetsWhileClientLags(t *testing.T) {
	h, _ := newHarness(t, "")
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		chunk := fmt.Appendf(nil, "%x\r\n%s\r\n", 64<<10, bytes.Repeat([]byte("x"), 64<<10))
		for range 256 { // far more than the sockets hold: the writes block
			if _, err := h.engine.Write(chunk); err != nil {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the client's socket fills up
	_ = h.engine.(*net.TCPConn).SetLinger(0)
	_ = h.engine.Close()
	<-wrote
	res := h.result(t)
	if res.Ended || res.ClientGone || res.Err == nil {
		t.Errorf("result = %+v, want cut by the engine", res)
	}
}

// TestRelayPanics: a panic in a stream's OnData, OnEnd or Done ends that
// stream (its sockets closed), and the loop carries the next one.
func TestRelayPanics(t *testing.T) {
	r, _ := startRelay(t, 1)

	// OnData panics: Done tells the stream was cut.
	_, e := loopback.Pair(t)
	_, c := loopback.Pair(t)
	done := make(chan Result, 1)
	if err := r.Add(&Stream{Engine: e, Client: c, Pending: []byte("1\r\nx\r\n"),
		OnData: func([]byte) { panic("counter bug") }, Done: func(res Result) { done <- res }}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Ended || res.Err == nil || !strings.Contains(res.Err.Error(), "counter bug") {
			t.Errorf("result = %+v, want cut by the panic", res)
		}
	case <-time.After(wait):
		t.Fatal("the stream whose OnData panicked did not end")
	}

	// OnEnd panics, the end with the first bytes or read later: the
	// stream is cut, and the client never gets the end.
	for _, tt := range []struct{ pending, later string }{{"1\r\nx\r\n0\r\n\r\n", ""}, {"1\r\nx\r\n", "0\r\n\r\n"}} {
		engineEnd, e := loopback.Pair(t)
		clientEnd, c := loopback.Pair(t)
		if err := r.Add(&Stream{Engine: e, Client: c, Pending: []byte(tt.pending), OnData: func([]byte) {},
			OnEnd: func() { panic("release bug") }, Done: func(res Result) { _ = c.Close(); done <- res }}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(engineEnd, tt.later); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-done:
			if res.Ended || res.Err == nil || !strings.Contains(res.Err.Error(), "release bug") {
				t.Errorf("pending %q: result = %+v, want cut by the panic", tt.pending, res)
			}
		case <-time.After(wait):
			t.Fatalf("pending %q: the stream whose OnEnd panicked did not end", tt.pending)
		}
		_ = clientEnd.SetReadDeadline(time.Now().Add(wait))
		if got, _ := io.ReadAll(clientEnd); strings.Contains(string(got), "0\r\n\r\n") {
			t.Errorf("pending %q: the client got %q, the end included", tt.pending, got)
		}
	}

	// Done panics: the sockets are closed for it.
	engineEnd, e := loopback.Pair(t)
	clientEnd, c := loopback.Pair(t)
	if err := r.Add(&Stream{Engine: e, Client: c, Pending: []byte("0\r\n\r\n"), OnData: func([]byte) {},
		Done: func(Result) { panic("log bug") }}); err != nil {
		t.Fatal(err)
	}
	for _, end := range []net.Conn{engineEnd, clientEnd} {
		_ = end.SetReadDeadline(time.Now().Add(wait))
		if _, err := io.ReadAll(end); err != nil {
			t.Errorf("the peer of a stream whose Done panicked: %v, want its connection closed", err)
		}
	}

	// The loop goes on.
	h := &harness{done: make(chan Result, 1)}
	var re, rc net.Conn
	h.engine, re = loopback.Pair(t)
	h.client, rc = loopback.Pair(t)
	if err := r.Add(&Stream{Engine: re, Client: rc, Pending: []byte("1\r\ny\r\n0\r\n\r\n"), OnData: func([]byte) {},
		Done: func(res Result) { h.done <- res }}); err != nil {
		t.Fatal(err)
	}
	if got := h.readN(t, 11); string(got) != "1\r\ny\r\n0\r\n\r\n" {
		t.Errorf("the next stream got %q", got)
	}
	if res := h.result(t); !res.Ended {
		t.Errorf("the next stream: %+v, want ended", res)
	}
}

// TestOnEndComesBeforeTheClientHasTheEnd: OnEnd runs once the relay has
// read the body's last chunk, before the client is given it and before
// Done; a stream cut before its end never calls it.
func TestOnEndComesBeforeTheClientHasTheEnd(t *testing.T) {
	tests := []struct {
		name, pending, engine string
		close                 bool // the engine closes after its bytes
		ended                 bool
	}{
		{name: "end with the first bytes", pending: "1\r\na\r\n0\r\n\r\n", ended: true},
		{name: "end read later, with data", pending: "1\r\na\r\n", engine: "1\r\nb\r\n0\r\n\r\n", ended: true},
		{name: "end read alone", pending: "1\r\na\r\n1\r\nb\r\n", engine: "0\r\n\r\n", ended: true},
		{name: "cut before the end", pending: "1\r\na\r\n", engine: "1\r\nb", close: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := startRelay(t, 1)
			engine, relayEngine := loopback.Pair(t)
			client, relayClient := loopback.Pair(t)
			var mu sync.Mutex
			var order []string
			var atEnd []byte // what the client had when OnEnd ran
			done := make(chan Result, 1)
			err := r.Add(&Stream{Engine: relayEngine, Pending: []byte(tt.pending), Client: relayClient,
				OnData: func([]byte) {},
				OnEnd: func() {
					// Whatever the relay wrote before is there within 50 ms.
					_ = client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
					b, _ := io.ReadAll(client)
					mu.Lock()
					order, atEnd = append(order, "end"), b
					mu.Unlock()
				},
				Done: func(res Result) {
					mu.Lock()
					order = append(order, "done")
					mu.Unlock()
					_ = relayClient.Close() // the sockets are the caller's again
					done <- res
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(engine, tt.engine); err != nil {
				t.Fatal(err)
			}
			if tt.close {
				_ = engine.Close()
			}
			var res Result
			select {
			case res = <-done:
			case <-time.After(wait):
				t.Fatal("the stream did not end")
			}
			_ = client.SetReadDeadline(time.Now().Add(wait))
			rest, _ := io.ReadAll(client)
			mu.Lock()
			defer mu.Unlock()
			if res.Ended != tt.ended {
				t.Fatalf("result %+v, want ended %v", res, tt.ended)
			}
			if !tt.ended {
				if len(order) != 1 || order[0] != "done" {
					t.Errorf("calls %v for a cut stream, want Done alone", order)
				}
				return
			}
			if strings.Join(order, ",") != "end,done" {
				t.Errorf("calls %v, want OnEnd once, then Done", order)
			}
			if bytes.Contains(atEnd, []byte("0\r\n\r\n")) {
				t.Errorf("the client had %q when OnEnd ran: the end came before it", atEnd)
			}
			if got, want := string(atEnd)+string(rest), tt.pending+tt.engine; got != want {
				t.Errorf("the client got %q, want %q", got, want)
			}
		})
	}
}
