package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The bad-input catalogue: what slotgate answers to hostile or broken
// input on its proxy port, and to a hostile engine, over raw sockets
// against the real binary. After every case no slot is taken, a burst of
// N requests is admitted, slotgate's goroutines are back to their
// baseline, and a normal request is served.

const (
	badSlots    = 2
	badMaxBody  = 4096
	badMaxGRPC  = 1024
	badBodyWait = time.Second // --request-body-timeout
)

// bench is what the cases run against: one slotgate in front of a raw
// fake engine and a gRPC engine, and a decoy nothing may dial.
type bench struct {
	sg    *sidecar
	eng   *rawEngine
	grpc  *grpcEngine
	decoy *decoy
	addr  string // slotgate's proxy host:port
}

// answer is what a client saw on its connection.
type answer struct {
	status  int    // 0: no answer
	errType string // the OpenAI error type of slotgate's JSON error; "": not one
	reason  string // X-Slotgate-Reason; "": none
	closed  bool   // the connection was closed after the answer
	cut     bool   // the body ended before its declared length
	h2      string // HTTP/2 and gRPC: the frame or status that ended it
}

type badCase struct {
	name string
	send string                          // raw bytes, written at once on a new connection
	do   func(*testing.T, *bench) answer // plays the case, when send is not enough
	want answer
	// reaches is the request the engine must see ("METHOD URI"); ""
	// means that nothing at all may reach it, unless mayReach names
	// the one request that may or may not, as timing has it.
	reaches, mayReach string
	// own runs the case on a slotgate of its own, in parallel: it takes
	// long, and its goroutines would upset the others' counts.
	own  bool
	skip string
}

func TestBadInput(t *testing.T) {
	t.Cleanup(func() {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		goleak.VerifyNone(t)
	})
	b := newBench(t)
	oversizedBody := strings.Repeat("x", badMaxBody*2)
	cases := []badCase{
		{name: "oversized headers",
			send: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n",
			want: answer{status: 431, errType: "invalid_request_error", reason: "header_too_large", closed: true}},
		{name: "oversized body",
			send: fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(oversizedBody), oversizedBody),
			want: answer{status: 413, errType: "invalid_request_error", reason: "too_large", closed: true}},
		{name: "headers trickled", own: true, do: trickleHeaders,
			want: answer{closed: true}},
		{name: "body trickled", do: trickleBody,
			want: answer{status: 408, errType: "invalid_request_error", reason: "body_timeout", closed: true}},
		{name: "Content-Length and Transfer-Encoding",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "duplicate Content-Length",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
			want: badRequest},
		{name: "conflicting Content-Length",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{}",
			want: badRequest},
		{name: "Content-Length list",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}",
			want: badRequest},
		{name: "obsolete line folding",
			send: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n",
			want: badRequest},
		{name: "bare LF request line",
			send: "GET /v1/models HTTP/1.1\nHost: x\n\n",
			want: badRequest},
		{name: "bare LF header line",
			send: "GET /v1/models HTTP/1.1\r\nHost: x\n\r\n",
			want: badRequest},
		{name: "Transfer-Encoding gzip",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}",
			want: badRequest},
		{name: "Transfer-Encoding gzip, chunked",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "two Transfer-Encoding lines",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "Transfer-Encoding on HTTP/1.0",
			send: "POST /v1/completions HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"2d\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n",
			want: badRequest},
		{name: "bare LF in a chunked trailer",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: a\n\r\n" +
				"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			// The head is sound, so the request streams to the engine
			// until its trailer breaks the rules (whether its head went
			// out before the body failed is timing); the request after
			// it never goes anywhere.
			want: badRequest, mayReach: "POST /v1/completions"},
		{name: "absolute-form URI", do: absoluteForm,
			want: answer{status: 200}, reaches: "GET /v1/models"},
		{name: "Host of another host", do: otherHost,
			want: answer{status: 200}, reaches: "GET /v1/models"},
		{name: "CONNECT", do: connect,
			want: answer{status: 405, errType: "invalid_request_error", reason: "method_not_allowed", closed: true}},
		{name: "unknown method",
			send: "BREW /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 405}, reaches: "BREW /v1/models"},
		{name: "HTTP/1.0 without keep-alive",
			send: "GET /v1/models HTTP/1.0\r\n\r\n",
			want: answer{status: 200, closed: true}, reaches: "GET /v1/models"},
		{name: "h2c upgrade", do: h2cUpgrade,
			want: answer{status: 200}, reaches: "GET /v1/models"},
		// The garbage reads as a frame header declaring a 16 MiB frame.
		{name: "HTTP/2 preface then garbage", do: h2Garbage,
			want: answer{closed: true, h2: "GOAWAY FRAME_SIZE_ERROR"}},
		{name: "HTTP/2 bad SETTINGS", do: h2BadSettings,
			want: answer{closed: true, h2: "GOAWAY PROTOCOL_ERROR"}},
		{name: "gRPC truncated prefix", do: grpcCall(grpcFrame(5, 0)[:3]),
			want: answer{h2: "grpc-status 13"}},
		{name: "gRPC length beyond body", do: grpcCall(grpcFrame(100, 10)),
			want: answer{h2: "grpc-status 13"}},
		{name: "gRPC oversized message", do: grpcCall(grpcFrame(badMaxGRPC+1, badMaxGRPC+1)),
			want: answer{h2: "grpc-status 8"}},
		{name: "engine oversized headers",
			send: "GET /hostile/oversized-header HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 502, errType: "EngineError", reason: "engine_error"}, reaches: "GET /hostile/oversized-header"},
		{name: "engine malformed status line",
			send: "GET /hostile/bad-status HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 502, errType: "EngineError", reason: "engine_error"}, reaches: "GET /hostile/bad-status"},
		{name: "engine short body",
			send: "GET /hostile/short-body HTTP/1.1\r\nHost: x\r\n\r\n",
			// slotgate has the head and the 11 bytes buffered when the
			// engine's close cuts the body: net/http aborts the answer
			// unflushed, so the client sees the connection close with no
			// answer, never a complete one.
			want: answer{closed: true}, reaches: "GET /hostile/short-body"},
		{name: "idle connections", do: idleConnections,
			want: answer{status: 200}, reaches: "GET /v1/models"},
	}
	for _, tc := range cases {
		if tc.own {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				// A header timeout of 1 s: it would close the idle
				// connections of the shared bench.
				runBadCase(t, newBench(t, "--request-header-timeout", "1s"), tc)
			})
			continue
		}
		t.Run(tc.name, func(t *testing.T) { runBadCase(t, b, tc) })
	}
}

var badRequest = answer{status: 400, errType: "invalid_request_error", reason: "bad_request", closed: true}

func runBadCase(t *testing.T, b *bench, tc badCase) {
	if tc.skip != "" {
		t.Skip(tc.skip)
	}
	base := b.baseline(t)
	b.eng.take()
	var got answer
	if tc.do != nil {
		got = tc.do(t, b)
	} else {
		got = sendRaw(t, b.addr, tc.send)
	}
	if got != tc.want {
		t.Errorf("answer = %+v, want %+v", got, tc.want)
	}
	seen := b.eng.take()
	var reached []string
	for _, r := range seen {
		reached = append(reached, r.String())
	}
	switch {
	case tc.mayReach != "" && (len(seen) > 1 || len(seen) == 1 && reached[0] != tc.mayReach):
		t.Errorf("the engine received %q, want at most %q", reached, tc.mayReach)
	case tc.mayReach != "":
	case tc.reaches == "" && len(seen) > 0:
		t.Errorf("the engine received %q; nothing may reach it", reached)
	case tc.reaches != "" && (len(seen) != 1 || reached[0] != tc.reaches):
		t.Errorf("the engine received %q, want exactly %q", reached, tc.reaches)
	}
	if n := b.decoy.dialed(); n != 0 {
		t.Errorf("slotgate dialed the decoy %d times; only the engine may be dialed", n)
	}
	b.checkHealthy(t, base)
}

func newBench(t *testing.T, args ...string) *bench {
	t.Helper()
	b := &bench{eng: newRawEngine(t), grpc: newGRPCEngine(t), decoy: newDecoy(t)}
	b.sg = start(t, b.eng.url(), nil, append([]string{
		"--engine-request-limit", strconv.Itoa(badSlots), "--request-queue-limit", "1",
		"--max-request-body-bytes", strconv.Itoa(badMaxBody), "--request-body-timeout", badBodyWait.String(),
		"--grpc-max-message-bytes", strconv.Itoa(badMaxGRPC), "--engine-grpc-url", "http://" + b.grpc.addr,
		"--engine-metrics-dialect", "none", "--access-log=false"}, args...)...)
	b.addr = strings.TrimPrefix(b.sg.proxy, "http://")
	b.burst(t) // warms the engine connections up
	return b
}

// baseline is slotgate's goroutine count before a case.
func (b *bench) baseline(t *testing.T) float64 {
	t.Helper()
	return b.sg.metric("go_goroutines")
}

// checkHealthy checks what every case must leave behind: no slot or queue
// place taken, a burst of N requests admitted, slotgate's goroutines back
// to base (within a margin for its own background work), and a normal
// request served.
func (b *bench) checkHealthy(t *testing.T, base float64) {
	t.Helper()
	eventually(t, "no request in flight or queued", func() bool {
		return b.sg.metric("dynamo_engine_request") == 0 && b.sg.metric("dynamo_request_queue") == 0
	})
	b.burst(t)
	const margin = 6
	deadline := time.Now().Add(waitLimit)
	for g := b.sg.metric("go_goroutines"); g > base+margin; g = b.sg.metric("go_goroutines") {
		if time.Now().After(deadline) {
			t.Fatalf("slotgate has %v goroutines, %v before the case", g, base)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.eng.take()
}

// burst sends N requests that the engine holds: all N must be admitted
// at once (none queued), then served.
func (b *bench) burst(t *testing.T) {
	t.Helper()
	results := make(chan answer, badSlots)
	for range badSlots {
		go func() { results <- sendRaw(t, b.addr, "GET /v1/hold HTTP/1.1\r\nHost: x\r\n\r\n") }()
	}
	eventually(t, "a burst of N requests held by the engine", func() bool { return b.eng.holdingNow() == badSlots })
	if q := b.sg.metric("dynamo_request_queue"); q != 0 {
		t.Errorf("queue = %v during a burst of N, want 0", q)
	}
	b.eng.releaseHeld()
	for range badSlots {
		if a := <-results; a.status != http.StatusOK {
			t.Errorf("burst request answered %+v, want 200", a)
		}
	}
}

// sendRaw writes req on a new connection and reads the answer.
func sendRaw(t *testing.T, addr, req string) answer {
	t.Helper()
	c := dialRaw(t, addr)
	defer c.Close()
	go func() { _, _ = io.WriteString(c, req) }() // a refused head may stop its write
	return readAnswer(t, c)
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	return c
}

// readAnswer reads one HTTP/1.x answer off c, then whether c was closed
// after it (no more bytes within a second, then EOF or reset).
func readAnswer(t *testing.T, c net.Conn) answer {
	t.Helper()
	rd := bufio.NewReader(c)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return answer{closed: closedErr(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, reason: resp.Header.Get("X-Slotgate-Reason")}
	if err != nil {
		a.cut = errors.Is(err, io.ErrUnexpectedEOF)
	}
	if resp.Header.Get("Content-Type") == "application/json" && a.reason != "" {
		e := decodeError(t, string(body))
		a.errType = e.Error.Type
		if e.Error.Code != resp.StatusCode {
			t.Errorf("error code %d in a %d answer", e.Error.Code, resp.StatusCode)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = rd.ReadByte()
	a.closed = a.cut || closedErr(err)
	return a
}

func closedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// trickleHeaders sends a head a byte every 200 ms: the proxy port's
// header timeout (--request-header-timeout, 1 s on its bench) closes the
// connection, with no answer, however slowly bytes keep coming.
func trickleHeaders(t *testing.T, b *bench) answer {
	c := dialRaw(t, b.addr)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	head := "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("s", 100)
	for i := range len(head) {
		if _, err := c.Write([]byte{head[i]}); err != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
		if i > 40 {
			return answer{status: -1} // still open well past the timeout
		}
	}
	return readAnswer(t, c)
}

// trickleBody sends a request's body a byte every 300 ms, well past
// --request-body-timeout: 408, and the slot back.
func trickleBody(t *testing.T, b *bench) answer {
	c := dialRaw(t, b.addr)
	defer c.Close()
	body := `{"prompt":"slow"}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body))
	go func() {
		for i := range len(body) {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	return readAnswer(t, c)
}

func absoluteForm(t *testing.T, b *bench) answer {
	return b.checkEngineHost(t, sendRaw(t, b.addr, "GET http://"+b.decoy.addr()+"/v1/models HTTP/1.1\r\nHost: "+b.decoy.addr()+"\r\n\r\n"))
}

func otherHost(t *testing.T, b *bench) answer {
	return b.checkEngineHost(t, sendRaw(t, b.addr, "GET /v1/models HTTP/1.1\r\nHost: "+b.decoy.addr()+"\r\n\r\n"))
}

// checkEngineHost checks that the request reached the engine in origin
// form, addressed to the engine.
func (b *bench) checkEngineHost(t *testing.T, a answer) answer {
	t.Helper()
	b.eng.mu.Lock()
	defer b.eng.mu.Unlock()
	for _, r := range b.eng.seen {
		if r.host != b.eng.ln.Addr().String() {
			t.Errorf("the engine got Host %q, want its own address", r.host)
		}
	}
	return a
}

func connect(t *testing.T, b *bench) answer {
	return sendRaw(t, b.addr, "CONNECT "+b.decoy.addr()+" HTTP/1.1\r\nHost: "+b.decoy.addr()+"\r\n\r\n")
}

// h2cUpgrade asks for an h2c upgrade: it is ignored, the request served
// over HTTP/1.1, and the engine is not offered the upgrade.
func h2cUpgrade(t *testing.T, b *bench) answer {
	a := sendRaw(t, b.addr, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
		"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n")
	b.eng.mu.Lock()
	defer b.eng.mu.Unlock()
	for _, r := range b.eng.seen {
		if r.header.Get("Upgrade") != "" || r.header.Get("Http2-Settings") != "" {
			t.Errorf("the engine was offered the upgrade: %v", r.header)
		}
	}
	return a
}

// h2Conn opens an HTTP/2 connection with prior knowledge.
func h2Conn(t *testing.T, addr string) (net.Conn, *http2.Framer) {
	t.Helper()
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	return c, http2.NewFramer(c, c)
}

// h2End reads frames until a GOAWAY or the connection's end.
func h2End(c net.Conn, fr *http2.Framer) answer {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return answer{closed: true}
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			a := answer{h2: "GOAWAY " + g.ErrCode.String()}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for err == nil {
				_, err = fr.ReadFrame()
			}
			a.closed = closedErr(err)
			return a
		}
	}
}

func h2Garbage(t *testing.T, b *bench) answer {
	c, fr := h2Conn(t, b.addr)
	defer c.Close()
	_, _ = c.Write(bytes.Repeat([]byte{0xff}, 64))
	return h2End(c, fr)
}

// h2BadSettings sends SETTINGS_ENABLE_PUSH = 2, which RFC 9113 §6.5.2 makes
// a PROTOCOL_ERROR.
func h2BadSettings(t *testing.T, b *bench) answer {
	c, fr := h2Conn(t, b.addr)
	defer c.Close()
	if err := fr.WriteRawFrame(http2.FrameSettings, 0, 0, []byte{0, byte(http2.SettingEnablePush), 0, 0, 0, 2}); err != nil {
		t.Fatal(err)
	}
	return h2End(c, fr)
}

// grpcFrame is a gRPC message prefix declaring length bytes, then have
// bytes of payload.
func grpcFrame(length, have int) []byte {
	b := make([]byte, 5+have)
	b[1], b[2], b[3], b[4] = byte(length>>24), byte(length>>16), byte(length>>8), byte(length)
	return b
}

// grpcCall sends one gRPC call over raw HTTP/2 whose only DATA is data,
// and reports the grpc-status that ends it. The engine must not see it.
func grpcCall(data []byte) func(*testing.T, *bench) answer {
	return func(t *testing.T, b *bench) answer {
		before := b.grpc.calls.Load()
		c, fr := h2Conn(t, b.addr)
		defer c.Close()
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.testing.TestService/StreamingOutputCall"},
			{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteData(1, true, data); err != nil {
			t.Fatal(err)
		}
		a := grpcStatus(t, c, fr)
		if n := b.grpc.calls.Load() - before; n != 0 {
			t.Errorf("the gRPC engine got %d calls", n)
		}
		return a
	}
}

// grpcStatus reads stream 1's headers until its end and returns its
// grpc-status.
func grpcStatus(t *testing.T, c net.Conn, fr *http2.Framer) answer {
	t.Helper()
	status := ""
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == "grpc-status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return answer{closed: true, h2: "no grpc-status: " + err.Error()}
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			if f.StreamEnded() {
				return answer{h2: "grpc-status " + status}
			}
		case *http2.RSTStreamFrame:
			return answer{h2: "RST_STREAM " + f.ErrCode.String()}
		case *http2.GoAwayFrame:
			return answer{h2: "GOAWAY " + f.ErrCode.String()}
		}
	}
}

// idleConnections opens many connections and leaves them idle: slotgate
// serves a normal request meanwhile, and its goroutines come back down
// once they are closed. The count is 2000, scaled down to what the file
// descriptor limit allows the test process (both ends are local, but
// only this end counts against this process's limit).
func idleConnections(t *testing.T, b *bench) answer {
	n := 2000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && int(lim.Cur)-256 < n {
		n = max(int(lim.Cur)-256, 0)
		t.Logf("file descriptor limit %d: %d idle connections", lim.Cur, n)
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var d net.Dialer
	for range n {
		c, err := d.DialContext(ctx, "tcp", b.addr)
		if err != nil {
			t.Fatalf("dial idle connection %d: %v", len(conns), err)
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	eventually(t, "slotgate serving every idle connection", func() bool {
		return b.sg.metric("go_goroutines") >= float64(n)
	})
	a := sendRaw(t, b.addr, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
	t.Logf("slotgate's goroutines with %d idle connections: %v", n, b.sg.metric("go_goroutines"))
	return a
}

// rawEngine is a fake engine on a raw TCP listener: it records every
// request that reaches it (its probes aside), holds /v1/hold until told,
// and answers the /hostile/ paths with broken answers.
type rawEngine struct {
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	seen    []engineRequest
	conns   map[net.Conn]bool
	holding int
	hold    chan struct{}
	change  chan struct{}
}

// engineRequest is one request as the engine received it.
type engineRequest struct {
	method, uri, host string
	header            http.Header
}

func (r engineRequest) String() string { return r.method + " " + r.uri }

func newRawEngine(t *testing.T) *rawEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEngine{ln: ln, conns: map[net.Conn]bool{}, hold: make(chan struct{}), change: make(chan struct{})}
	e.wg.Go(e.accept)
	t.Cleanup(e.close)
	return e
}

func (e *rawEngine) url() string { return "http://" + e.ln.Addr().String() }

func (e *rawEngine) close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	select {
	case <-e.hold:
	default:
		close(e.hold)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *rawEngine) accept() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns[c] = true
		e.mu.Unlock()
		e.wg.Go(func() { e.serve(c) })
	}
}

func (e *rawEngine) serve(c net.Conn) {
	defer func() {
		e.mu.Lock()
		delete(e.conns, c)
		e.mu.Unlock()
		c.Close()
	}()
	rd := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(rd)
		if err != nil {
			if err != io.EOF && !strings.Contains(err.Error(), "closed") {
				e.record(engineRequest{method: "UNPARSABLE", uri: err.Error()})
			}
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			e.record(engineRequest{method: req.Method, uri: req.RequestURI, host: req.Host, header: req.Header})
			return // a broken body gets no answer
		}
		if !e.answer(c, req) || req.Close {
			return
		}
	}
}

// engineBody is the fake engine's answer to every ordinary request.
const engineBody = `{"engine":"ok"}`

// answer writes the engine's answer to req; false closes the connection.
func (e *rawEngine) answer(c net.Conn, req *http.Request) bool {
	path := req.URL.Path
	if path == "/health" {
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
		return err == nil
	}
	e.record(engineRequest{method: req.Method, uri: req.RequestURI, host: req.Host, header: req.Header})
	switch path {
	case "/v1/hold":
		e.mu.Lock()
		e.holding++
		hold := e.hold
		e.notifyLocked()
		e.mu.Unlock()
		<-hold
		e.mu.Lock()
		e.holding--
		e.mu.Unlock()
	case "/hostile/oversized-header":
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 2\r\n\r\n{}", strings.Repeat("a", 2<<20))
		return false
	case "/hostile/bad-status":
		_, _ = io.WriteString(c, "HTTP/1.1 2OO Fine\r\nContent-Length: 2\r\n\r\n{}")
		return false
	case "/hostile/short-body":
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"partial\":")
		return false
	}
	if req.Method != http.MethodGet && req.Method != http.MethodPost && req.Method != http.MethodHead {
		body := "engine: method not allowed\n"
		_, err := fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return err == nil
	}
	body := engineBody
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	if req.Method == http.MethodHead {
		body = ""
	}
	_, err := io.WriteString(c, head+body)
	return err == nil
}

func (e *rawEngine) record(r engineRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, r)
	e.notifyLocked()
}

func (e *rawEngine) notifyLocked() {
	close(e.change)
	e.change = make(chan struct{})
}

// take returns and forgets what reached the engine so far.
func (e *rawEngine) take() []engineRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.seen
	e.seen = nil
	return s
}

// holdingNow is how many /v1/hold requests the engine holds.
func (e *rawEngine) holdingNow() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holding
}

// releaseHeld lets the held requests finish, and holds the next ones.
func (e *rawEngine) releaseHeld() {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.hold)
	e.hold = make(chan struct{})
}

// decoy is a listener that nothing should ever dial: the host an
// absolute-form URI or a Host header names.
type decoy struct {
	ln    net.Listener
	mu    sync.Mutex
	dials int
	wg    sync.WaitGroup
}

func newDecoy(t *testing.T) *decoy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &decoy{ln: ln}
	d.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.dials++
			d.mu.Unlock()
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); d.wg.Wait() })
	return d
}

func (d *decoy) addr() string { return d.ln.Addr().String() }

func (d *decoy) dialed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}
