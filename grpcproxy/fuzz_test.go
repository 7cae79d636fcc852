package grpcproxy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/limiter"
)

// rawCodec sends and receives *[]byte as they are: the fuzz targets'
// client and engine see messages as bytes, as the proxy does.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, errors.New("rawCodec: not a *[]byte")
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return errors.New("rawCodec: not a *[]byte")
	}
	*b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "raw" }

// echoEngine is the trivial engine behind the fuzzed proxy: any method,
// every message sent back as it came.
func echoEngine(_ any, ss grpc.ServerStream) error {
	for {
		var b []byte
		if err := ss.RecvMsg(&b); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(&b); err != nil {
			return err
		}
	}
}

// fuzzMaxMsg is the proxy's message bound in the fuzz targets: small,
// so that a length prefix over it is easy to find.
const fuzzMaxMsg = 1 << 16

// fuzzProxy is one echo engine and the proxy in front of it, on real
// 127.0.0.1 listeners, set up once per fuzz target.
type fuzzProxy struct {
	addr string // the proxy's
	gate *gate.Gate
	conn *grpc.ClientConn // a client's connection to the proxy
}

func newFuzzProxy(tb testing.TB) *fuzzProxy {
	tb.Helper()
	engine := grpc.NewServer(grpc.UnknownServiceHandler(echoEngine), grpc.ForceServerCodecV2(rawCodec{}))
	engineAddr := fuzzServe(tb, engine)
	engineConn, err := grpc.NewClient(engineAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = engineConn.Close() })
	lim, err := limiter.New(limiter.Options{Slots: 64, QueueLen: 64})
	if err != nil {
		tb.Fatal(err)
	}
	g, err := gate.New(gate.Options{Limiter: lim, NoAbortGrace: true})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := grpcproxy.New(grpcproxy.Options{Gate: g, Engine: engineConn, MaxMessageBytes: fuzzMaxMsg})
	if err != nil {
		tb.Fatal(err)
	}
	fp := &fuzzProxy{addr: fuzzServe(tb, grpc.NewServer(p.ServerOptions()...)), gate: g}
	fp.conn, err = grpc.NewClient(fp.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = fp.conn.Close() })
	return fp
}

// fuzzServe serves srv on a new 127.0.0.1 listener until tb ends.
func fuzzServe(tb testing.TB, srv *grpc.Server) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	tb.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return lis.Addr().String()
}

// idle waits, bounded, until the gate holds no slot and queues no call:
// every call released its slot, whatever happened to it.
func (fp *fuzzProxy) idle(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		s := fp.gate.Stats()
		if s.Holding == 0 && s.Waiting == 0 && s.Prefilling == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the gate still holds %d slot(s), %d waiting place(s), %d queued after %s",
				what, s.Holding, s.Prefilling, s.Waiting, bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// splitMessages cuts data into messages, one per byte of sizes (its
// length, modulo what is left), the rest of data last.
func splitMessages(data, sizes []byte) [][]byte {
	var msgs [][]byte
	for _, s := range sizes {
		n := 0
		if len(data) > 0 {
			n = int(s) % (len(data) + 1)
		}
		msgs = append(msgs, data[:n])
		data = data[n:]
	}
	return append(msgs, data)
}

// FuzzProxyMessages sends arbitrary messages (data cut by sizes) through
// the proxy to an engine that echoes them, with an arbitrary rank and
// request id in the call's metadata. The call ends with a status; an OK
// one brings every message back untouched, in order; the slot is
// released.
func FuzzProxyMessages(f *testing.F) {
	f.Add([]byte(`{"prompt":"hello"}`), []byte{}, "", "")
	f.Add([]byte("\x0a\x05hello\x12\x00"), []byte{2, 0, 3}, "0", "req-1")
	f.Add([]byte{}, []byte{0, 0, 0}, " 3 ", "")
	f.Add(bytes.Repeat([]byte{0xff}, 4096), []byte{255, 1}, "-1", "\x00id")
	f.Add([]byte("\x00\x00\x00\x00\x05hello"), []byte{5}, "99999999999999999999", strings.Repeat("i", 300))
	fp := newFuzzProxy(f)
	f.Fuzz(func(t *testing.T, data, sizes []byte, rank, id string) {
		if len(data) > 32<<10 || len(sizes) > 64 {
			return // both ways within the HTTP/2 windows: the echo never blocks
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, grpcproxy.RankKey, rank, grpcproxy.RequestIDKey, id)
		sent := splitMessages(data, sizes)
		got, err := fuzzCall(ctx, fp.conn, sent)
		if _, ok := status.FromError(err); !ok {
			t.Fatalf("the call ended with %v, not a gRPC status", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the call did not end within %s: %v", bound, err)
		}
		if code := status.Code(err); code != codes.OK && printable(rank) && printable(id) {
			t.Fatalf("%d message(s) of %d bytes: %v", len(sent), len(data), err)
		}
		if err == nil && !equalMessages(got, sent) {
			t.Fatalf("sent %d message(s) %q, got back %d %q", len(sent), sent, len(got), got)
		}
		fp.idle(t, "after a call")
	})
}

// printable reports whether s is a metadata value gRPC sends: printable
// ASCII only (binary values go under "-bin" keys).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// fuzzCall sends msgs on one bidirectional call and returns what came
// back, with the call's status (nil for OK).
func fuzzCall(ctx context.Context, conn *grpc.ClientConn, msgs [][]byte) ([][]byte, error) {
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/fuzz.Echo/Call", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := cs.SendMsg(&m); err != nil {
			break // the status comes with RecvMsg
		}
	}
	_ = cs.CloseSend()
	var got [][]byte
	for {
		var b []byte
		if err := cs.RecvMsg(&b); err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, err
		}
		got = append(got, b)
	}
}

func equalMessages(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// fuzzHeaderKeys are the keys FuzzProxyFrames may give the fuzzed header
// value, picked by a byte of its flags: each is read by the proxy or by
// the gRPC transport in front of it.
var fuzzHeaderKeys = []string{
	grpcproxy.RankKey, grpcproxy.RequestIDKey, "grpc-timeout", "grpc-encoding",
	"content-type", "x-custom", "x-custom-bin", "te", "grpc-accept-encoding",
}

// FuzzProxyFrames speaks raw HTTP/2 to the proxy over TCP: one call whose
// request body is data, cut into DATA frames at the bytes of cuts, as it
// comes (a 5-byte gRPC prefix of any compressed flag and length, or
// none), with one fuzzed header (value, under the key flags>>1 picks).
// Bit 0 of flags ends the call with RST_STREAM instead of END_STREAM.
// The proxy must not panic; a call the client ended answers with a status
// in its trailers (or a stream reset, when the fuzzed header is not a
// valid HTTP/2 field); and every slot is released.
func FuzzProxyFrames(f *testing.F) {
	msg := func(compressed byte, length uint32, body string) []byte {
		b := []byte{compressed, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], length)
		return append(b, body...)
	}
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(0), "")
	f.Add(append(msg(0, 2, "hi"), msg(0, 0, "")...), []byte{3, 1}, uint8(2), "1")
	f.Add(msg(1, 5, "hello"), []byte{}, uint8(6), "gzip")
	f.Add(msg(1, 5, "hello"), []byte{}, uint8(0), "")
	f.Add(msg(2, 5, "hello"), []byte{}, uint8(0), "")
	f.Add(msg(0, 100, "short"), []byte{}, uint8(0), "")
	f.Add(msg(0, fuzzMaxMsg+1, "x"), []byte{}, uint8(0), "")
	f.Add(msg(0, 0xffffffff, ""), []byte{}, uint8(0), "")
	f.Add([]byte{0, 0, 0}, []byte{}, uint8(0), "")
	f.Add(msg(0, 5, "hello"), []byte{1, 1, 1, 1, 1}, uint8(4), "1S")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(4), "0n")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(4), "99999999999H")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(8), "application/grpc+json")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(8), "text/plain")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(14), "trailers, x")
	f.Add(msg(0, 5, "hello"), []byte{2}, uint8(1), "")
	f.Add(msg(0, 5, "hello"), []byte{}, uint8(12), "\x00\xff")
	fp := newFuzzProxy(f)
	f.Fuzz(func(t *testing.T, data, cuts []byte, flags uint8, value string) {
		if len(data) > 32<<10 || len(cuts) > 64 || len(value) > 4<<10 {
			return // within the stream's flow-control window, and a header block
		}
		key := fuzzHeaderKeys[int(flags>>1)%len(fuzzHeaderKeys)]
		reset := flags&1 == 1
		end, err := rawCall(fp.addr, key, value, splitMessages(data, cuts), reset)
		if err != nil {
			t.Fatal(err)
		}
		validHeader := httpguts.ValidHeaderFieldValue(value) && (key != "te" || value == "trailers")
		switch {
		case reset:
		case end.status != "":
		case end.reset && !validHeader:
		default:
			t.Fatalf("header %s: %q, %d byte(s) of body: the call ended with %s, no gRPC status", key, value, len(data), end)
		}
		fp.idle(t, "after a call")
	})
}

// rawEnd is how a raw call ended.
type rawEnd struct {
	status string // grpc-status of the trailers, "" when none came
	reset  bool   // the server reset the stream
	goAway bool   // or closed the connection
}

func (e rawEnd) String() string {
	switch {
	case e.status != "":
		return "grpc-status " + e.status
	case e.reset:
		return "a stream reset"
	case e.goAway:
		return "a GOAWAY"
	}
	return "nothing"
}

// rawCall makes one call over a new HTTP/2 connection to addr: a HEADERS
// frame with key: value among gRPC's own headers, one DATA frame per
// part of body, the last one ending the stream (or a RST_STREAM after
// them when reset is set); then, unless reset, it reads until the call
// ends. Its error is a failure of the test's own side.
func rawCall(addr, key, value string, body [][]byte, reset bool) (rawEnd, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rawEnd{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		return rawEnd{}, err
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = 1 << 20
	if err := fr.WriteSettings(); err != nil {
		return rawEnd{}, err
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/fuzz.Echo/Call"}, {Name: ":authority", Value: addr},
	}
	std := []hpack.HeaderField{{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}}
	for _, h := range std {
		if h.Name != key {
			fields = append(fields, h)
		}
	}
	fields = append(fields, hpack.HeaderField{Name: key, Value: value})
	for _, h := range fields {
		if err := enc.WriteField(h); err != nil {
			return rawEnd{}, err
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		return rawEnd{}, err
	}
	for i, part := range body {
		last := i == len(body)-1 && !reset
		for len(part) > 16<<10 {
			if err := fr.WriteData(1, false, part[:16<<10]); err != nil {
				return rawEnd{}, nil // the server may end the call and the connection first
			}
			part = part[16<<10:]
		}
		if err := fr.WriteData(1, last, part); err != nil {
			return rawEnd{}, nil
		}
	}
	if reset {
		_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
		return rawEnd{}, nil
	}
	return readEnd(fr)
}

// readEnd reads frames until stream 1 ends, acknowledging the server's
// settings and pings.
func readEnd(fr *http2.Framer) (rawEnd, error) {
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			return rawEnd{}, errors.New("the connection ended before the call: " + err.Error())
		}
		switch f := frame.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					return rawEnd{}, err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := fr.WritePing(true, f.Data); err != nil {
					return rawEnd{}, err
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				return rawEnd{status: headerValue(f, "grpc-status")}, nil
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				return rawEnd{reset: true}, nil
			}
		case *http2.GoAwayFrame:
			return rawEnd{goAway: true}, nil
		}
	}
}

// headerValue is the first value of name in f, "" when none.
func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, h := range f.RegularFields() {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}
