package command

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/proxy"
)

// pathRefuser is an earlyAnswerer that refuses the requests whose path
// begins with /refuse, and records every head it was offered.
type pathRefuser struct {
	mu      sync.Mutex
	offered []string // request lines
}

func (r *pathRefuser) AnswerEarly(head, _ []byte, c proxy.EarlyClient) proxy.Early {
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	r.mu.Lock()
	r.offered = append(r.offered, string(line))
	r.mu.Unlock()
	_, rest, _ := bytes.Cut(line, []byte(" "))
	path, _, _ := bytes.Cut(rest, []byte(" "))
	if !bytes.HasPrefix(path, []byte("/refuse")) {
		return proxy.Early{}
	}
	ans := append([]byte("HTTP/1.1 529 early\r\nX-Path: "), path...)
	_, err := c.Write(append(ans, "\r\nContent-Length: 0\r\n\r\n"...))
	return proxy.Early{Answered: true, Gone: err != nil}
}

func (r *pathRefuser) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.offered...)
}

// pipeListener hands out the server ends of in-memory connections: a
// write returns once the server has read it whole, so that a test
// decides exactly which bytes each of the server's reads finds.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// earlyServer serves, behind a strict listener with early answers from
// r, a handler that answers 200 with the request's path in X-Path. It
// returns a dialer of in-memory connections and the states the server's
// own ConnState hook saw, which countAnswers must pass on.
func earlyServer(t *testing.T, r earlyAnswerer, idle time.Duration) (dial func() (net.Conn, *bufio.Reader), closed <-chan struct{}, stop func()) {
	t.Helper()
	return earlyServerTimed(t, r, idle, 10*time.Second)
}

// earlyServerTimed is earlyServer with the header timeout given.
func earlyServerTimed(t *testing.T, r earlyAnswerer, idle, header time.Duration) (dial func() (net.Conn, *bufio.Reader), closed <-chan struct{}, stop func()) {
	t.Helper()
	var srv *http.Server
	srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/relayed" {
				relayLike(t, srv, w)
				return
			}
			w.Header().Set("X-Path", r.URL.Path)
			w.Header().Set("Content-Length", "0")
		}),
		ReadHeaderTimeout: header,
		IdleTimeout:       idle,
		MaxHeaderBytes:    8 << 10,
	}
	gone := make(chan struct{}, 16)
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			gone <- struct{}{}
		}
	}
	ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	strict := newStrictListener(ln, srv, r)
	go func() { _ = srv.Serve(strict) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func() (net.Conn, *bufio.Reader) {
		client, server := net.Pipe()
		ln.conns <- server
		t.Cleanup(func() { _ = client.Close() })
		_ = client.SetDeadline(time.Now().Add(10 * time.Second))
		return client, bufio.NewReader(client)
	}, gone, strict.stopEarly
}

// relayLike answers as the relay does: it takes the connection from
// net/http, writes the answer itself, tells the listener so and gives the
// connection back to the server, as if just accepted.
func relayLike(t *testing.T, srv *http.Server, w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Path: /relayed\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Error(err)
	}
	c.(interface{ AnsweredOutside() }).AnsweredOutside()
	proxy.Resume(srv, c)
}

func post(path string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
}

// keptConn dials the server and has net/http serve the connection's
// first request (not one the refuser answers): what the test sends next
// comes on a kept connection that net/http owes nothing, in its idle
// read.
func keptConn(t *testing.T, dial func() (net.Conn, *bufio.Reader)) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := dial()
	send(t, c, post("/first"))
	answers(t, br, 1)
	return c, br
}

// answers reads n answers and returns "status path" of each.
func answers(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	var got []string
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v (had %q)", len(got)+1, err, got)
		}
		_ = resp.Body.Close()
		got = append(got, resp.Status[:3]+" "+resp.Header.Get("X-Path"))
	}
	return got
}

// postEach posts each path in turn on c, reading each answer before the
// next request, and returns the answers.
func postEach(t *testing.T, c net.Conn, br *bufio.Reader, paths ...string) []string {
	t.Helper()
	var got []string
	for _, path := range paths {
		send(t, c, post(path))
		got = append(got, answers(t, br, 1)...)
	}
	return got
}

// wantSame fails the test when got is not want, in order.
func wantSame(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s %q, want %q", what, got, want)
	}
}

func send(t *testing.T, c net.Conn, raw string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
}

// TestEarlyAnswers: while net/http owes a connection nothing, from its
// first request on, each whole request is offered, a refused one
// answered by the listener and the others served by net/http, in the
// order they came, and the connection lives on.
func TestEarlyAnswers(t *testing.T) {
	r := &pathRefuser{}
	dial, _, _ := earlyServer(t, r, time.Minute)
	c, br := dial()
	got := postEach(t, c, br, "/refuse-first", "/refuse-1", "/ok", "/refuse-2", "/refuse-3", "/ok-2")
	wantSame(t, "answers", got, []string{"529 /refuse-first", "529 /refuse-1", "200 /ok", "529 /refuse-2", "529 /refuse-3", "200 /ok-2"})
	wantSame(t, "offered", r.lines(), []string{"POST /refuse-first HTTP/1.1", "POST /refuse-1 HTTP/1.1", "POST /ok HTTP/1.1",
		"POST /refuse-2 HTTP/1.1", "POST /refuse-3 HTTP/1.1", "POST /ok-2 HTTP/1.1"})
}

// TestEarlyAnswersKeepTheHeaderDeadline: a head that begins after an
// early answer in net/http's first read of a connection (its header read,
// whose deadline the answer replaced with the idle one) must come whole
// within the header timeout, as net/http has it come after an idle wait:
// a client that sends a request line and no more is cut off then, not
// after the idle timeout.
func TestEarlyAnswersKeepTheHeaderDeadline(t *testing.T) {
	const header = 500 * time.Millisecond
	for _, idle := range []time.Duration{time.Minute, 0} { // 0: net/http waits for no idle connection
		t.Run(fmt.Sprintf("idle timeout %v", idle), func(t *testing.T) {
			dial, closed, _ := earlyServerTimed(t, &pathRefuser{}, idle, header)
			c, br := dial()
			wantSame(t, "answers", postEach(t, c, br, "/refuse-first"), []string{"529 /refuse-first"})
			start := time.Now()
			send(t, c, "POST /slow HTTP/1.1\r\nHost: x\r\n")
			select {
			case <-closed:
				if waited := time.Since(start); waited < header {
					t.Errorf("the connection was closed after %v, before the header timeout", waited)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a head that never ended kept its connection past the header timeout")
			}
		})
	}
	t.Run("no idle timeout", func(t *testing.T) {
		// The answer lifts the header deadline for the wait after it,
		// as net/http waits for a kept connection's next request: for
		// ever when it has no idle timeout.
		dial, closed, _ := earlyServerTimed(t, &pathRefuser{}, 0, header)
		c, br := dial()
		wantSame(t, "answers", postEach(t, c, br, "/refuse-first"), []string{"529 /refuse-first"})
		time.Sleep(2 * header) // idle past the header deadline of the read the answer was in
		select {
		case <-closed:
			t.Fatal("an idle connection was closed by the header deadline")
		default:
		}
		wantSame(t, "answers after a wait", postEach(t, c, br, "/refuse-later"), []string{"529 /refuse-later"})
	})
}

// TestEarlyAnswersKeepOrder: requests pipelined behind one net/http
// serves go to net/http too, an early answer never overtaking an answer
// net/http owes; refused requests that come together are answered
// together, in order.
func TestEarlyAnswersKeepOrder(t *testing.T) {
	r := &pathRefuser{}
	dial, _, _ := earlyServer(t, r, time.Minute)
	c, br := keptConn(t, dial)
	send(t, c, post("/ok")+post("/refuse-behind")+post("/refuse-behind-2"))
	got := answers(t, br, 3)
	send(t, c, post("/refuse-1")+post("/refuse-2")+post("/ok-after"))
	got = append(got, answers(t, br, 3)...)
	wantSame(t, "answers", got, []string{"200 /ok", "200 /refuse-behind", "200 /refuse-behind-2", "529 /refuse-1", "529 /refuse-2", "200 /ok-after"})
}

// TestEarlyAnswersWantWholeRequests: a head that comes in pieces, or a
// body that has not all come, goes to net/http, which reads the rest.
// Each comes after an early answer, so that the listener, not net/http's
// watch of a request it serves, reads its first piece.
func TestEarlyAnswersWantWholeRequests(t *testing.T) {
	r := &pathRefuser{}
	dial, _, _ := earlyServer(t, r, time.Minute)
	c, br := keptConn(t, dial)

	send(t, c, post("/refuse-0"))
	got := answers(t, br, 1)
	send(t, c, "POST /refuse-split HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n")
	send(t, c, "\r\n{}")
	got = append(got, answers(t, br, 1)...)

	send(t, c, post("/refuse-1"))
	got = append(got, answers(t, br, 1)...)
	send(t, c, "POST /refuse-body HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{")
	send(t, c, "}")
	got = append(got, answers(t, br, 1)...)
	wantSame(t, "answers", got, []string{"529 /refuse-0", "200 /refuse-split", "529 /refuse-1", "200 /refuse-body"})
	wantSame(t, "offered (neither the split head nor the short body)", r.lines(),
		[]string{"POST /first HTTP/1.1", "POST /refuse-0 HTTP/1.1", "POST /refuse-1 HTTP/1.1"})
}

// TestEarlyAnswersRenewTheIdleDeadline: a client refused again and again
// is busy, not idle: its connection outlives the idle timeout; left
// alone, it is closed after it.
func TestEarlyAnswersRenewTheIdleDeadline(t *testing.T) {
	const idle = time.Second
	dial, closed, _ := earlyServer(t, &pathRefuser{}, idle)
	c, br := keptConn(t, dial)
	for start := time.Now(); time.Since(start) < 5*idle/2; time.Sleep(20 * time.Millisecond) {
		send(t, c, post("/refuse"))
		if got := answers(t, br, 1); got[0] != "529 /refuse" {
			t.Fatalf("answer %q, want an early 529", got[0])
		}
	}
	select {
	case <-closed:
		t.Fatal("the connection was closed while the client was refused")
	default:
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: read %v, want EOF once the idle timeout passed", err)
	}
}

// TestEarlyAnswerToAClientGone: an early answer the client does not take
// ends the connection, as net/http ends one whose client left.
func TestEarlyAnswerToAClientGone(t *testing.T) {
	dial, closed, _ := earlyServer(t, &pathRefuser{}, time.Minute)
	c, _ := keptConn(t, dial)
	send(t, c, post("/refuse"))
	_ = c.Close()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server kept the connection of a client gone")
	}
}

// TestEarlyAnswersAfterTheRelay: a connection the relay answered and gave
// back is served by net/http as if just accepted, and owes nothing: its
// next head may be answered early at once.
func TestEarlyAnswersAfterTheRelay(t *testing.T) {
	r := &pathRefuser{}
	dial, _, _ := earlyServer(t, r, time.Minute)
	c, br := dial()
	got := postEach(t, c, br, "/first", "/refuse-1", "/relayed", "/refuse-after", "/refuse-2", "/ok")
	wantSame(t, "answers", got, []string{"200 /first", "529 /refuse-1", "200 /relayed", "529 /refuse-after", "529 /refuse-2", "200 /ok"})
}

// TestEarlyAnswersStop: once the server shuts down, every request goes to
// net/http, which knows what a server shutting down answers.
func TestEarlyAnswersStop(t *testing.T) {
	r := &pathRefuser{}
	dial, _, stop := earlyServer(t, r, time.Minute)
	c, br := dial()
	got := postEach(t, c, br, "/first", "/refuse-1")
	stop()
	got = append(got, postEach(t, c, br, "/refuse-2")...)
	wantSame(t, "answers", got, []string{"200 /first", "529 /refuse-1", "200 /refuse-2"})
}

// TestFrontEndOff: with --front-end=false the listener answers nothing
// itself, and net/http's ConnState hook is left as it was.
func TestFrontEndOff(t *testing.T) {
	for _, on := range []bool{false, true} {
		a := &app{cfg: config.Config{FrontEnd: on}, proxy: &proxy.Proxy{}}
		srv := &http.Server{}
		l := newStrictListener(nil, srv, a.frontEnd())
		if (l.early != nil) != on || (srv.ConnState != nil) != on {
			t.Errorf("--front-end=%v: early answers %v, answers counted %v", on, l.early != nil, srv.ConnState != nil)
		}
	}
}
