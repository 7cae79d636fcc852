package grpcproxy_test

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/limiter"
)

// streamResult is how one server-streaming call ended.
type streamResult struct {
	msgs int
	err  error
	tr   metadata.MD
}

// streamCall makes a server-streaming call of n messages and reads it to
// its end.
func streamCall(ctx context.Context, c testgrpc.TestServiceClient, n int) streamResult {
	params := make([]*testgrpc.ResponseParameters, n)
	for i := range params {
		params[i] = &testgrpc.ResponseParameters{Size: 8}
	}
	s, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{ResponseParameters: params})
	if err != nil {
		return streamResult{err: err}
	}
	var r streamResult
	for {
		if _, err := s.Recv(); err != nil {
			r.err = eofIsOK(err)
			r.tr = s.Trailer()
			return r
		}
		r.msgs++
	}
}

// TestCapacity: with N=3 and Q=2, of 40 concurrent calls that the engine
// holds, 3 reach the engine, 2 wait and go once the engine releases the
// first, and 35 are refused at once with RESOURCE_EXHAUSTED, Dynamo's
// message and retry-after; the engine never runs more than 3.
func TestCapacity(t *testing.T) {
	const calls, n, q = 40, 3, 2
	h := newHarness(t, config{lim: limiter.Options{Slots: n, QueueLen: q}, retry: 1500 * time.Millisecond})
	ctx := metadata.AppendToOutgoingContext(testContext(t), keyHold, "start")

	results := make(chan streamResult, calls)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			r := streamCall(ctx, h.client, 2)
			if r.err != nil {
				refused.Add(1)
			}
			results <- r
		})
	}
	eventually(t, "3 calls at the engine, 2 queued, 35 refused", func() bool {
		return h.eng.inFlight.Load() == n && h.gate.Stats().Waiting == q && refused.Load() == calls-n-q
	})
	h.eng.release("start")
	wg.Wait()
	close(results)

	served := 0
	for r := range results {
		if r.err == nil {
			if r.msgs != 2 {
				t.Errorf("a served call got %d messages, want 2", r.msgs)
			}
			served++
			continue
		}
		wantStatus(t, r.err, codes.ResourceExhausted, gate.MessageCapacity)
		wantMD(t, "refusal trailer", r.tr, grpcproxy.RetryAfterKey, "2")
		wantMD(t, "refusal trailer", r.tr, grpcproxy.ReasonKey, "capacity")
	}
	if served != n+q {
		t.Fatalf("%d calls served, want %d", served, n+q)
	}
	if got := h.eng.calls.Load(); got != n+q {
		t.Fatalf("engine calls = %d, want %d", got, n+q)
	}
	if got := h.eng.maxInFlight.Load(); got > n {
		t.Fatalf("engine ran %d calls at once, want at most %d", got, n)
	}
	want := map[string]int{string(gate.AdmittedDirect): n, string(gate.AdmittedQueued): q, string(gate.RejectedCapacity): calls - n - q}
	if got := h.obs.count(); !maps.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	h.idle(t)
}

// TestCancelledWhileQueued: a call whose client cancels it while it waits
// is never forwarded; it ends cancelled_queued and the slots come back.
func TestCancelledWhileQueued(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{Slots: 1, QueueLen: 1}})
	ctx := metadata.AppendToOutgoingContext(testContext(t), keyHold, "start")

	first := make(chan streamResult, 1)
	go func() { first <- streamCall(ctx, h.client, 1) }()
	h.arrival(t)

	qctx, cancel := context.WithCancel(ctx)
	queued := make(chan streamResult, 1)
	go func() { queued <- streamCall(qctx, h.client, 1) }()
	eventually(t, "the second call is queued", func() bool { return h.gate.Stats().Waiting == 1 })
	cancel()
	if r := <-queued; status.Code(r.err) != codes.Canceled {
		t.Fatalf("queued call ended with %v, want CANCELED", r.err)
	}
	eventually(t, "the queued call is reported", func() bool { return h.obs.count()[string(gate.CancelledQueued)] == 1 })

	h.eng.release("start")
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	if got := h.eng.calls.Load(); got != 1 {
		t.Fatalf("engine calls = %d, want 1: the cancelled call was forwarded", got)
	}
	want := map[string]int{string(gate.AdmittedDirect): 1, string(gate.CancelledQueued): 1}
	if got := h.obs.count(); !maps.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	h.idle(t)
}

// TestWaitingLimit: with W=1, a call whose engine has not sent its first
// message holds the waiting place; the next call waits until that first
// message is relayed, not until the first call ends.
func TestWaitingLimit(t *testing.T) {
	h := newHarness(t, config{lim: limiter.Options{WaitingLimit: 1, QueueLen: 4}})
	ctx := metadata.AppendToOutgoingContext(testContext(t), keyHold, "start", keyHold, "first")

	s, err := h.client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1}, {Size: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	h.arrival(t)

	second := make(chan streamResult, 1)
	go func() { second <- streamCall(ctx, h.client, 1) }()
	eventually(t, "the second call is queued", func() bool { return h.gate.Stats().Waiting == 1 })
	if got := h.eng.calls.Load(); got != 1 {
		t.Fatalf("engine calls = %d while the first has no first message, want 1", got)
	}

	h.eng.release("start") // the first call's first message goes out; it then holds at "first"
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	h.arrival(t) // the second call reaches the engine while the first still runs
	if got := h.eng.inFlight.Load(); got != 2 {
		t.Fatalf("engine in flight = %d, want 2", got)
	}

	h.eng.release("first")
	if r := <-second; r.err != nil || r.msgs != 1 {
		t.Fatalf("second call: %d messages, %v", r.msgs, r.err)
	}
	for {
		if _, err := s.Recv(); err != nil {
			if err := eofIsOK(err); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	want := map[string]int{string(gate.AdmittedDirect): 1, string(gate.AdmittedQueued): 1}
	if got := h.obs.count(); !maps.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	h.idle(t)
}

// TestEngineUnreachable: an engine that refuses connections is slotgate's
// UNAVAILABLE, outcome rejected_unavailable, and the slot comes back.
func TestEngineUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}, engineAddr: addr})

	for _, k := range []string{"unary", "server streaming"} {
		t.Run(k, func(t *testing.T) {
			ctx := testContext(t)
			if k == "unary" {
				_, err = h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			} else {
				err = streamCall(ctx, h.client, 1).err
			}
			wantStatus(t, err, codes.Unavailable, gate.MessageUnreachable)
			h.idle(t)
		})
	}
	want := map[string]int{string(gate.RejectedUnavailable): 2}
	if got := h.obs.count(); !maps.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
}

// TestRefusals: the gate's refusals are statuses with trailers only, and
// nothing reaches the engine.
func TestRefusals(t *testing.T) {
	t.Run("draining", func(t *testing.T) {
		h := newHarness(t, config{lim: limiter.Options{Slots: 1}, retry: 500 * time.Millisecond})
		h.gate.StartDraining()
		var hdr, tr metadata.MD
		_, err := h.client.UnaryCall(testContext(t), &testgrpc.SimpleRequest{}, grpc.Header(&hdr), grpc.Trailer(&tr))
		wantStatus(t, err, codes.Unavailable, gate.MessageDraining)
		wantMD(t, "trailer", tr, grpcproxy.RetryAfterKey, "1")
		wantMD(t, "trailer", tr, grpcproxy.ReasonKey, "draining")
		if len(tr[grpcproxy.RequestIDKey]) != 1 {
			t.Fatalf("trailer %v, want the call's id", tr)
		}
		if got := h.obs.outcomes(); len(got) != 1 || got[0] != string(gate.RejectedDraining) {
			t.Fatalf("outcomes = %v, want rejected_draining", got)
		}
		if h.eng.calls.Load() != 0 {
			t.Fatal("a refused call reached the engine")
		}
	})

	t.Run("ranks", func(t *testing.T) {
		lims, err := gate.RankLimiters(2, func() (*limiter.Limiter, error) { return limiter.New(limiter.Options{Slots: 2}) })
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, config{limiters: lims})
		ctx := testContext(t)

		// A rank the engine does not have is a bad request.
		_, err = h.client.EmptyCall(metadata.AppendToOutgoingContext(ctx, grpcproxy.RankKey, "5"), &testgrpc.Empty{})
		wantStatus(t, err, codes.InvalidArgument, "data-parallel rank 5 is not a rank of this engine (0 through 1)")
		// A pinned call keeps its rank; an unpinned one is given the
		// gate's.
		if _, err := h.client.EmptyCall(metadata.AppendToOutgoingContext(ctx, grpcproxy.RankKey, "1"), &testgrpc.Empty{}); err != nil {
			t.Fatal(err)
		}
		wantMD(t, "engine metadata", h.arrival(t).md, grpcproxy.RankKey, "1")
		if _, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
			t.Fatal(err)
		}
		wantMD(t, "engine metadata", h.arrival(t).md, grpcproxy.RankKey, "0")
		want := map[string]int{string(gate.RejectedBadRequest): 1, string(gate.AdmittedDirect): 2}
		if got := h.obs.count(); !maps.Equal(got, want) {
			t.Fatalf("outcomes = %v, want %v", got, want)
		}
	})

	t.Run("policy", func(t *testing.T) {
		cl := &classifier{}
		pol := &gate.Policy{Classifier: cl, Classes: []string{"default"}, DefaultClass: "default",
			SessionHeader: "X-Session-Id", CaptureHeaders: []string{"x-tier"}}
		h := newHarness(t, config{lim: limiter.Options{Slots: 1, QueueLen: 1}, policy: pol, retry: time.Second})
		ctx := metadata.AppendToOutgoingContext(testContext(t), "x-session-id", "s1", "x-tier", "gold")
		if _, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
			t.Fatal(err)
		}
		session, tier, events := cl.seen()
		if session != "s1" || tier != "gold" {
			t.Fatalf("classifier saw session %q, tier %q; want s1, gold", session, tier)
		}
		if want := []admission.EventKind{admission.Sent, admission.Responding, admission.Completed}; !slices.Equal(events, want) {
			t.Fatalf("classifier events = %v, want %v", events, want)
		}

		var tr metadata.MD
		ctx = metadata.AppendToOutgoingContext(testContext(t), "x-tier", "reject")
		_, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Trailer(&tr))
		wantStatus(t, err, codes.ResourceExhausted, "slow down")
		wantMD(t, "trailer", tr, grpcproxy.ReasonKey, "rate_limited")
		wantMD(t, "trailer", tr, grpcproxy.RetryAfterKey, "1")
		want := map[string]int{string(gate.AdmittedDirect): 1, string(gate.RejectedRateLimited): 1}
		if got := h.obs.count(); !maps.Equal(got, want) {
			t.Fatalf("outcomes = %v, want %v", got, want)
		}
	})
}

// classifier records what it is given, and rate-limits tier "reject".
type classifier struct {
	mu            sync.Mutex
	session, tier string
	events        []admission.EventKind
}

func (c *classifier) Classify(_ context.Context, r *admission.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	tier, _ := r.Header("x-tier")
	if tier == "reject" {
		return admission.Reject(admission.RateLimited, "slow down")
	}
	c.session, c.tier = r.Session(), tier
	return nil
}

func (c *classifier) OnEvent(e admission.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e.Kind)
}

func (c *classifier) seen() (string, string, []admission.EventKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, c.tier, append([]admission.EventKind(nil), c.events...)
}

// TestMessageSize: a message over the bound, either way, ends the call
// with gRPC's own RESOURCE_EXHAUSTED, and the slot comes back.
func TestMessageSize(t *testing.T) {
	const bound = 1024
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}, maxMsg: bound})
	ctx := testContext(t)

	_, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, 4*bound)}})
	wantStatus(t, err, codes.ResourceExhausted, "")
	h.idle(t)

	_, err = h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 4 * bound})
	wantStatus(t, err, codes.ResourceExhausted, "")
	h.idle(t)

	// Under the bound, both ways, the call goes through.
	if _, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, bound/2)}, ResponseSize: bound / 2}); err != nil {
		t.Fatal(err)
	}
	want := []string{string(gate.RejectedTooLarge), string(gate.EngineError), string(gate.AdmittedDirect)}
	eventually(t, "three calls reported", func() bool { return len(h.obs.outcomes()) == 3 })
	if got := h.obs.outcomes(); !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
}

// panicConn is an engine connection that panics when a call is opened: a
// fault injected where the proxy calls out.
type panicConn struct{ grpc.ClientConnInterface }

func (panicConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	panic("engine connection broke")
}

// TestPanic: a call whose forwarding panics ends INTERNAL, is reported
// once as engine_error, and its slot comes back; the proxy goes on.
func TestPanic(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	g, err := gate.New(gate.Options{Limiter: lim, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpcproxy.New(grpcproxy.Options{Gate: g, Engine: panicConn{}})
	if err != nil {
		t.Fatal(err)
	}
	client := testgrpc.NewTestServiceClient(dial(t, serve(t, grpc.NewServer(p.ServerOptions()...))))
	for range 2 {
		_, err := client.EmptyCall(testContext(t), &testgrpc.Empty{})
		wantStatus(t, err, codes.Internal, "")
	}
	if got, want := obs.outcomes(), []string{string(gate.EngineError), string(gate.EngineError)}; !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	if s := g.Stats(); s.Holding != 0 {
		t.Fatalf("%d slots held after the panics, want 0", s.Holding)
	}
}

// TestWaitingPlaceAfterClientLeft: with W=1, a call whose client leaves
// before its first message keeps its waiting place through the abort
// grace, as over HTTP: the engine needs a moment to see the abort, so the
// queued call reaches it no sooner than 5 ms later.
func TestWaitingPlaceAfterClientLeft(t *testing.T) {
	const grace = 5 * time.Millisecond
	h := newHarness(t, config{lim: limiter.Options{WaitingLimit: 1, QueueLen: 4}})
	ctx, leave := context.WithCancel(metadata.AppendToOutgoingContext(testContext(t), keyHold, "start"))
	defer leave()
	s, err := h.client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	h.arrival(t)
	second := make(chan streamResult, 1)
	go func() { second <- streamCall(testContext(t), h.client, 1) }()
	eventually(t, "the second call is queued", func() bool { return h.gate.Stats().Waiting == 1 })

	left := time.Now()
	leave()
	h.arrival(t)
	if d := time.Since(left); d < grace {
		t.Errorf("the queued call reached the engine %v after the client left, want at least %v", d, grace)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("the first call: %v, want CANCELED", err)
	}
	if r := <-second; r.err != nil || r.msgs != 1 {
		t.Fatalf("second call: %d messages, %v", r.msgs, r.err)
	}
	h.idle(t)
}
