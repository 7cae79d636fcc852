package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/proxy"
)

// strictServer serves, behind a strictListener on 127.0.0.1 and
// proxy.Strict as slotgate does, a handler that answers each request with
// its method, path and body, and returns its address.
func strictServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: proxy.Strict(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = fmt.Fprintf(w, "%s %s %q", r.Method, r.URL.Path, b)
		})),
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	go func() { _ = srv.Serve(newStrictListener(ln, srv, nil)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange writes raw on a new connection, closes its write side, and
// reads every answer until the server closes it.
func exchange(t testing.TB, addr, raw string) ([]string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(c)
	var got []string
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return got, nil
			}
			return got, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return got, err
		}
		got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, b))
	}
}

// TestStrictFraming: requests the strict listener must pass, pipelined on
// one connection with every body framing, reach the handler whole and in
// order; the shapes it refuses get 400 and nothing after them is served.
func TestStrictFraming(t *testing.T) {
	addr := strictServer(t)
	tests := []struct {
		name string
		raw  string
		want []string
	}{
		{"pipelined, every framing",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
				"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer-A: 1\r\n\r\n" +
				"GET /c HTTP/1.1\r\nHost: x\r\n\r\n" +
				"POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
			[]string{`200 POST /a "hello"`, `200 POST /b "abcde"`, `200 GET /c ""`, `200 POST /d ""`}},
		{"a body that looks like a request is a body",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{`200 POST /a "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"`}},
		{"Content-Length and chunked",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{"400 "}},
		{"after a good request, a bad one",
			"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /bad HTTP/1.1\nHost: x\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{`200 GET /ok ""`, "400 "}},
		{"the CRLF an old client sends after a POST body",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\r\n" +
				"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi\n" +
				"GET /c HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{`200 POST /a "hello"`, `200 POST /b "hi"`, `200 GET /c ""`}},
		{"a blank line after a GET is not skipped",
			"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{`200 GET /a ""`, "400 "}},
		{"a bad chunk size fails the body",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			[]string{"400 body: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := exchange(t, addr, tc.raw)
			if err != nil {
				t.Fatalf("exchange: %v (answers so far %q)", err, got)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("answers %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("answer %d = %q, want %q...", i, got[i], tc.want[i])
				}
				if strings.Contains(got[i], "GET /smuggled") && !strings.Contains(got[i], `"GET /smuggled`) {
					t.Errorf("answer %d served the smuggled request: %q", i, got[i])
				}
			}
		})
	}
}

// FuzzStrictListener feeds raw bytes to a server behind the strict
// listener: it must never panic or hang, and never serve a request the
// bytes smuggle behind a refused head or a body.
func FuzzStrictListener(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	} {
		f.Add(s)
	}
	addr := strictServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := exchange(t, addr, raw) // errors are fine; hangs and panics are not
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection hung with its client's side closed (answers %q)", got)
		}
		for _, a := range got {
			if strings.HasPrefix(a, "200 GET /smuggled ") && !strings.Contains(raw, "/smuggled") {
				t.Fatalf("served %q from nowhere", a)
			}
		}
	})
}

// TestStrictConnWorksItsSocketRaw: on Linux, a TCP connection the strict
// listener accepts reads and writes its socket raw (rawio.Socket), and
// the bytes go both ways as through the connection's own calls.
func TestStrictConnWorksItsSocketRaw(t *testing.T) {
	client, sc := acceptStrict(t)
	c := net.Conn(sc)
	if runtime.GOOS == "linux" && !sc.sock.Usable() {
		t.Fatal("an accepted TCP connection does not work its socket raw")
	}
	if _, err := io.WriteString(client, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := sc.read(buf); string(buf[:n]) != "ping" || err != nil {
		t.Errorf("read %q, %v; want ping", buf[:n], err)
	}
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(client, buf[:4]); string(buf[:n]) != "pong" || err != nil {
		t.Errorf("the client read %q, %v; want pong", buf[:n], err)
	}
}

// TestStrictConnReadsARequestWhole: a request that came whole is read in
// one read, however small the buffer net/http reads with: its first read
// of a connection peeks at 14 bytes (HTTP/2's preface), and early answers
// are written in that read for as long as the connection lives.
func TestStrictConnReadsARequestWhole(t *testing.T) {
	client, sc := acceptStrict(t)
	if !sc.sock.Usable() {
		t.Skip("the socket is worked raw on Linux only")
	}
	req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	if _, err := io.WriteString(client, req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // all of it in the socket
	if err := sc.fill(make([]byte, len("PRI * HTTP/2.0"))); err != nil {
		t.Fatal(err)
	}
	if string(sc.in) != req {
		t.Errorf("one read took %q, not the request whole", sc.in)
	}
}

// acceptStrict returns the two ends of a loopback connection the strict
// listener accepted, with deadlines 5 s off.
func acceptStrict(t *testing.T) (client net.Conn, sc *strictConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newStrictListener(ln, &http.Server{MaxHeaderBytes: 8 << 10}, nil)
	t.Cleanup(func() { _ = l.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = client.SetDeadline(time.Now().Add(5 * time.Second))
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return client, c.(*strictConn)
}
