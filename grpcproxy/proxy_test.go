package grpcproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/limiter"
)

// result is what a client saw of one call.
type result struct {
	msgs    []proto.Message
	hdr, tr metadata.MD
	st      *status.Status
}

// kind runs one kind of call with a client and returns what it saw.
type kind struct {
	name string
	run  func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result
}

// payload is n random bytes: whatever the proxy did to them would show.
func payload(t *testing.T, n int) *testgrpc.Payload {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return &testgrpc.Payload{Body: b}
}

func kinds(t *testing.T) []kind {
	big, small := payload(t, 200<<10), payload(t, 1000)
	return []kind{
		{"empty", func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result {
			var r result
			resp, err := c.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&r.hdr), grpc.Trailer(&r.tr))
			if err == nil {
				r.msgs = append(r.msgs, resp)
			}
			r.st = status.Convert(err)
			return r
		}},
		{"unary", func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result {
			var r result
			resp, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: big}, grpc.Header(&r.hdr), grpc.Trailer(&r.tr))
			if err == nil {
				if !bytes.Equal(resp.GetPayload().GetBody(), big.GetBody()) {
					t.Errorf("unary echo: %d bytes back, not the %d sent", len(resp.GetPayload().GetBody()), len(big.GetBody()))
				}
				r.msgs = append(r.msgs, resp)
			}
			r.st = status.Convert(err)
			return r
		}},
		{"server streaming", func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result {
			req := &testgrpc.StreamingOutputCallRequest{Payload: small, ResponseParameters: []*testgrpc.ResponseParameters{
				{Size: 10}, {Size: 0}, {Size: 100 << 10}, {Size: 3}}}
			s, err := c.StreamingOutputCall(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var r result
			for i := 0; ; i++ {
				m, err := s.Recv()
				if err != nil {
					r.st = status.Convert(eofIsOK(err))
					break
				}
				if want := outputBody(small.GetBody(), i, req.ResponseParameters[i].GetSize()); !bytes.Equal(m.GetPayload().GetBody(), want) {
					t.Errorf("server streaming message %d: %d bytes, not the %d expected", i, len(m.GetPayload().GetBody()), len(want))
				}
				r.msgs = append(r.msgs, m)
			}
			r.hdr, _ = s.Header()
			r.tr = s.Trailer()
			return r
		}},
		{"client streaming", func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result {
			s, err := c.StreamingInputCall(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			for _, p := range []*testgrpc.Payload{small, {}, big, small} {
				if s.Send(&testgrpc.StreamingInputCallRequest{Payload: p}) != nil {
					break // the engine ended the call: its status comes with CloseAndRecv
				}
				h.Write(p.GetBody())
			}
			var r result
			m, err := s.CloseAndRecv()
			if err == nil {
				if m.GetAggregatedPayloadSize() != int32(2*len(small.GetBody())+len(big.GetBody())) {
					t.Errorf("client streaming: the engine got %d bytes", m.GetAggregatedPayloadSize())
				}
				r.msgs = append(r.msgs, m)
			}
			r.st = status.Convert(err)
			r.hdr, _ = s.Header()
			r.tr = s.Trailer()
			if err == nil && r.tr.Get("x-body-sha256")[0] != hex.EncodeToString(h.Sum(nil)) {
				t.Errorf("client streaming: the engine got other bytes than those sent")
			}
			return r
		}},
		{"bidi", func(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient) result {
			s, err := c.FullDuplexCall(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var r result
			// Ping-pong: each answer comes back before the next message
			// goes, so nothing waits for the client's half-close.
			for i, p := range []*testgrpc.Payload{small, big, {}} {
				if s.Send(&testgrpc.StreamingOutputCallRequest{Payload: p}) != nil {
					break
				}
				m, err := s.Recv()
				if err != nil {
					r.st = status.Convert(err)
					break
				}
				if !bytes.Equal(m.GetPayload().GetBody(), p.GetBody()) {
					t.Errorf("bidi message %d: %d bytes back, not the %d sent", i, len(m.GetPayload().GetBody()), len(p.GetBody()))
				}
				r.msgs = append(r.msgs, m)
			}
			if r.st == nil {
				_ = s.CloseSend()
				_, err := s.Recv()
				r.st = status.Convert(eofIsOK(err))
			}
			r.hdr, _ = s.Header()
			r.tr = s.Trailer()
			return r
		}},
	}
}

func eofIsOK(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// TestTransparent runs each kind of call, as it is and failed by the
// engine before its first message, both at the engine itself and through
// the proxy (served by grpc.Server, and by its ServeHTTP on net/http's
// HTTP/2): the client must see the same messages, header, trailers and
// status either way, and the engine the same metadata.
func TestTransparent(t *testing.T) {
	behaviours := []struct {
		name    string
		md      []string
		outcome gate.Outcome
	}{
		{"served", nil, gate.AdmittedDirect},
		{"engine fails first", []string{keyFail, strconv.Itoa(int(codes.FailedPrecondition))}, gate.EngineError},
		{"engine sends header then fails", []string{keyFail, strconv.Itoa(int(codes.Internal)), keyHeaderFirst, "1"}, gate.EngineError},
	}
	for _, transport := range []struct {
		name      string
		serveHTTP bool
	}{{"grpc.Server", false}, {"ServeHTTP", true}} {
		t.Run(transport.name, func(t *testing.T) {
			h := newHarness(t, config{lim: limiter.Options{Slots: 2, QueueLen: 2}, serveHTTP: transport.serveHTTP})
			for _, k := range kinds(t) {
				for _, b := range behaviours {
					t.Run(k.name+"/"+b.name, func(t *testing.T) {
						md := metadata.Pairs(append([]string{
							"x-custom", "c1", "x-custom", "c2", "x-request-id", "req-" + k.name, "x-bin-bin", "\x00\xff",
						}, b.md...)...)
						ctx := metadata.NewOutgoingContext(testContext(t), md)
						want := k.run(ctx, t, h.direct)
						wantArrival := h.arrival(t)
						got := k.run(ctx, t, h.client)
						gotArrival := h.arrival(t)

						if transport.serveHTTP {
							// grpc.Server.ServeHTTP announces its trailers
							// in a header of its own (net/http's way).
							delete(got.hdr, "trailer")
						}
						sameResult(t, got, want)
						if b.md == nil && want.st.Code() != codes.OK {
							t.Fatalf("direct call failed: %v", want.st)
						}
						if b.md != nil && (want.st.Code() == codes.OK || want.st.Message() != engineFailMessage) {
							t.Fatalf("direct call: %v, want the engine's failure", want.st)
						}
						wantMD(t, "client header", got.hdr, "x-engine-header", "h")
						wantMD(t, "client header", got.hdr, "x-echo-custom", "c1", "c2")
						wantMD(t, "client trailer", got.tr, "x-engine-trailer", "t")
						// The engine sees what the client sent, but for the
						// authority (the proxy dials the engine itself).
						delete(wantArrival.md, ":authority")
						delete(gotArrival.md, ":authority")
						if !reflect.DeepEqual(gotArrival.md, wantArrival.md) {
							t.Errorf("engine metadata through the proxy:\n%#v\nwant, as sent directly:\n%#v", map[string][]string(gotArrival.md), map[string][]string(wantArrival.md))
						}
						outs := h.obs.outcomes()
						if len(outs) == 0 || outs[len(outs)-1] != string(b.outcome) {
							t.Errorf("outcomes = %v, want the last %s", outs, b.outcome)
						}
						h.idle(t)
					})
				}
			}
		})
	}
}

// sameResult checks that the proxied call looked to its client as the
// direct one did.
func sameResult(t *testing.T, got, want result) {
	t.Helper()
	if !proto.Equal(got.st.Proto(), want.st.Proto()) {
		t.Errorf("status %v, want %v (details included)", got.st.Proto(), want.st.Proto())
	}
	if len(got.msgs) != len(want.msgs) {
		t.Fatalf("%d messages, want %d", len(got.msgs), len(want.msgs))
	}
	for i := range got.msgs {
		if !proto.Equal(got.msgs[i], want.msgs[i]) {
			t.Errorf("message %d differs", i)
		}
	}
	if !reflect.DeepEqual(got.hdr, want.hdr) {
		t.Errorf("header %#v, want %#v", map[string][]string(got.hdr), map[string][]string(want.hdr))
	}
	if !reflect.DeepEqual(got.tr, want.tr) {
		t.Errorf("trailer %#v, want %#v", map[string][]string(got.tr), map[string][]string(want.tr))
	}
}

// TestRequestID: a call without an id gets one, sent to the engine; an
// id too long to log is replaced.
func TestRequestID(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}})
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"none", "", false},
		{"client's", "abc-123", true},
		{"too long", string(bytes.Repeat([]byte("x"), 200)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			if tc.id != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, grpcproxy.RequestIDKey, tc.id)
			}
			if _, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
				t.Fatal(err)
			}
			got := h.arrival(t).md[grpcproxy.RequestIDKey]
			switch {
			case len(got) != 1 || got[0] == "":
				t.Fatalf("engine got request ids %q, want one", got)
			case tc.kept && got[0] != tc.id, !tc.kept && got[0] == tc.id:
				t.Fatalf("engine got request id %q (client's %q, kept: %v)", got[0], tc.id, tc.kept)
			}
		})
	}
}

// TestDeadline: the client's deadline reaches the engine, and a call past
// it ends DEADLINE_EXCEEDED for the client and at the engine.
func TestDeadline(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}})

	// Longer than bound, so that the deadline is this one.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	clientDeadline, _ := ctx.Deadline()
	if _, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
		t.Fatal(err)
	}
	a := h.arrival(t)
	// grpc-timeout rounds up, to the millisecond for minutes.
	if !a.hasDeadline || a.deadline.After(clientDeadline.Add(time.Second)) || clientDeadline.Sub(a.deadline) > bound {
		t.Fatalf("engine deadline %v (set: %v), want one about the client's %v", a.deadline, a.hasDeadline, clientDeadline)
	}

	ctx, cancel = context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, keyHold, "start")
	_, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	wantStatus(t, err, codes.DeadlineExceeded, "")
	if err := h.left(t); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("engine's call ended with %v, want its context ended", err)
	}
	eventually(t, "the call is reported", func() bool { return len(h.obs.outcomes()) == 2 })
	if got, want := h.obs.outcomes(), []string{string(gate.AdmittedDirect), string(gate.CancelledRunning)}; !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	h.idle(t)
}

// TestClientCancel: a client that cancels a running call cancels it at
// the engine; its slot is released.
func TestClientCancel(t *testing.T) {
	for _, k := range []string{"server streaming", "bidi"} {
		t.Run(k, func(t *testing.T) {
			h := newHarness(t, config{lim: limiter.Options{Slots: 1}})
			ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(testContext(t), keyHold, "start"))
			defer cancel()
			var recv func() error
			if k == "bidi" {
				s, err := h.client.FullDuplexCall(ctx)
				if err != nil {
					t.Fatal(err)
				}
				recv = func() error { _, err := s.Recv(); return err }
			} else {
				s, err := h.client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
					ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1}}})
				if err != nil {
					t.Fatal(err)
				}
				recv = func() error { _, err := s.Recv(); return err }
			}
			h.arrival(t)
			cancel()
			wantStatus(t, recv(), codes.Canceled, "")
			if err := h.left(t); !errors.Is(err, context.Canceled) {
				t.Fatalf("engine's call ended with %v, want context.Canceled", err)
			}
			eventually(t, "the call is reported", func() bool { return h.obs.count()[string(gate.CancelledRunning)] == 1 })
			h.idle(t)
			if n := h.eng.calls.Load(); n != 1 {
				t.Fatalf("engine calls = %d, want 1", n)
			}
		})
	}
}

// TestRegisteredServices: services registered on the proxy's server are
// served there, with the proxy's codec falling back to protobuf; the
// engine never sees them.
func TestRegisteredServices(t *testing.T) {
	hs := health.NewServer()
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}, register: func(s *grpc.Server) {
		healthpb.RegisterHealthServer(s, hs)
	}})
	resp, err := healthpb.NewHealthClient(h.conn).Check(testContext(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, want SERVING", resp.GetStatus())
	}
	if n := h.eng.calls.Load(); n != 0 || len(h.obs.outcomes()) != 0 {
		t.Fatalf("engine calls = %d, outcomes %v: want none", n, h.obs.outcomes())
	}
}

// TestUnknownMethod: a method the engine does not have is the engine's
// UNIMPLEMENTED, passed through.
func TestUnknownMethod(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}})
	_, err := h.client.UnimplementedCall(testContext(t), &testgrpc.Empty{})
	wantStatus(t, err, codes.Unimplemented, "")
	h.idle(t)
}

func TestNewValidates(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Options{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, "127.0.0.1:1")
	for _, tc := range []struct {
		name string
		opts grpcproxy.Options
		ok   bool
	}{
		{"complete", grpcproxy.Options{Gate: g, Engine: conn}, true},
		{"no gate", grpcproxy.Options{Engine: conn}, false},
		{"no engine", grpcproxy.Options{Gate: g}, false},
		{"negative size", grpcproxy.Options{Gate: g, Engine: conn, MaxMessageBytes: -1}, false},
		{"negative retry-after", grpcproxy.Options{Gate: g, Engine: conn, RetryAfter: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := grpcproxy.New(tc.opts)
			if (err == nil) != tc.ok || (p != nil) != tc.ok {
				t.Fatalf("New = %v, %v; want ok %v", p, err, tc.ok)
			}
		})
	}
}

// TestReflectionTakesNoSlot: server reflection goes to the engine without
// admission, as a probe path does over HTTP: with the only slot and the
// queue taken, a reflection call still reaches the engine (which answers
// UNIMPLEMENTED here, having no reflection service), and it is reported
// to nobody.
func TestReflectionTakesNoSlot(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}})
	held := make(chan error, 1)
	ctx := metadata.AppendToOutgoingContext(testContext(t), keyHold, "start")
	go func() { _, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); held <- err }()
	h.arrival(t)
	for _, method := range []string{
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
	} {
		stream, err := h.conn.NewStream(testContext(t), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err == nil {
			_ = stream.CloseSend()
			err = stream.RecvMsg(&testgrpc.Empty{})
		}
		wantStatus(t, err, codes.Unimplemented, "")
	}
	h.eng.release("start")
	if err := <-held; err != nil {
		t.Fatalf("the held call: %v", err)
	}
	h.idle(t)
	if got := h.obs.outcomes(); len(got) != 1 {
		t.Errorf("outcomes %v, want only the held call's", got)
	}
}
