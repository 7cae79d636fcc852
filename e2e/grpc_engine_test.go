package e2e_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// These tests put enginesim's gRPC Generate (vLLM's VllmEngine) behind the
// real binary: the same admission as HTTP, measured by the engine's own
// counts, and the engine's process killed and started again.

// TestGRPCWaitingLimitWithEnginesim is TestWaitingLimit's scenario over
// gRPC: N=8, W=2, Q=4; two long prompts, then four short ones, which wait
// while the long ones are in prefill. The engine never has more than two
// requests before their first token, and the short calls stream before
// either long call ends.
func TestGRPCWaitingLimitWithEnginesim(t *testing.T) {
	t.Parallel()
	eng := startGRPCSim(t, enginesimSlow...)
	sg := start(t, eng.httpURL, nil, "--engine-grpc-url", "http://"+eng.grpcAddr,
		"--engine-request-limit", "8", "--engine-request-waiting-limit", "2", "--request-queue-limit", "4")
	client := grpcProxyClient(t, sg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	long, short := make([]generation, 2), make([]generation, shortRequests)
	var wg sync.WaitGroup
	for i := range long {
		wg.Go(func() {
			long[i] = generate(ctx, client, genRequest("long-"+strconv.Itoa(i), longPromptTokens, 40), nil)
		})
		eventually(t, "long call "+strconv.Itoa(i)+" admitted", func() bool {
			return sg.metric("dynamo_backend_admission_engine_request_count") == float64(i+1)
		})
	}
	for i := range short {
		wg.Go(func() { short[i] = generate(ctx, client, genRequest("short-"+strconv.Itoa(i), 4, 2), nil) })
	}
	eventually(t, "2 calls in prefill and 4 waiting", func() bool {
		return sg.metric("dynamo_backend_admission_engine_wait_count") == 2 &&
			sg.metric("dynamo_backend_admission_request_queue_count") == shortRequests
	})
	wg.Wait()

	engineMax := eng.metric("enginesim_requests_before_first_token_max")
	checkShortBeforeLong(t, long, short, engineMax)
	if engineMax > 2 {
		t.Errorf("with W=2 the engine had %v requests before their first token at once", engineMax)
	}
	if got := sg.metric("slotgate_requests_total", "protocol", "grpc"); got != 2+shortRequests {
		t.Errorf("slotgate_requests_total{protocol=grpc} = %v, want %d", got, 2+shortRequests)
	}
	for outcome, want := range map[string]float64{"admitted_direct": 2, "admitted_queued": shortRequests} {
		if got := sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", outcome); got != want {
			t.Errorf("slotgate_requests_total{protocol=grpc,outcome=%s} = %v, want %v", outcome, got, want)
		}
	}
	eventually(t, "every place freed", func() bool {
		return sg.metric("dynamo_backend_admission_engine_request_count") == 0 &&
			sg.metric("dynamo_backend_admission_engine_wait_count") == 0
	})
}

// checkShortBeforeLong checks that every call ended as asked and that
// each short call streamed before either long one ended, and logs the
// times with the engine's most requests before their first token.
func checkShortBeforeLong(t *testing.T, long, short []generation, engineMax float64) {
	t.Helper()
	for _, g := range slices.Concat(long, short) {
		if g.err != nil || g.firstToken.IsZero() || g.complete.GetFinishReason() != "length" {
			t.Fatalf("%s: %v, first token %v, complete %v", g.id, g.err, g.firstToken, g.complete)
		}
	}
	firstLongDone := long[0].done
	if long[1].done.Before(firstLongDone) {
		firstLongDone = long[1].done
	}
	var lastShort time.Time
	for _, g := range short {
		if !g.firstToken.Before(firstLongDone) {
			t.Errorf("%s streamed only after a long call ended", g.id)
		}
		if g.firstToken.After(lastShort) {
			lastShort = g.firstToken
		}
	}
	t.Logf("gRPC N=8 W=2 Q=4: engine's most requests in prefill %v; long TTFT %v %v, first done after %v; "+
		"short TTFT %v %v %v %v, the last %v before the first long call ended",
		engineMax, long[0].ttft(), long[1].ttft(), firstLongDone.Sub(long[0].start).Round(time.Millisecond),
		short[0].ttft(), short[1].ttft(), short[2].ttft(), short[3].ttft(), firstLongDone.Sub(lastShort).Round(time.Millisecond))
}

// TestGRPCCancelWithEnginesim: N=1, Q=2. A call queued behind one that
// holds the slot, whose client cancels, leaves the queue at once and
// never reaches the engine; the holder, cancelled mid-stream, frees its
// slot and the engine aborts its request.
func TestGRPCCancelWithEnginesim(t *testing.T) {
	t.Parallel()
	eng := startGRPCSim(t, "--speedup-ratio", "0.25")
	sg := start(t, eng.httpURL, nil, "--engine-grpc-url", "http://"+eng.grpcAddr,
		"--engine-request-limit", "1", "--request-queue-limit", "2")
	client := grpcProxyClient(t, sg)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	// 4000 tokens at about 25 ms a step: the holder outlasts the test.
	holderCtx, cancelHolder := context.WithCancel(ctx)
	defer cancelHolder()
	streaming, holder := make(chan struct{}), make(chan generation, 1)
	go func() {
		holder <- generate(holderCtx, client, genRequest("holder", 16, 4000), func() { close(streaming) })
	}()
	select {
	case <-streaming:
	case g := <-holder:
		t.Fatalf("the holder ended before streaming: %v", g.err)
	}

	leaverCtx, cancelLeaver := context.WithCancel(ctx)
	leaver := make(chan generation, 1)
	go func() { leaver <- generate(leaverCtx, client, genRequest("leaver", 16, 2), nil) }()
	eventually(t, "the leaver queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })
	cancelLeaver()
	if g := <-leaver; status.Code(g.err) != codes.Canceled {
		t.Errorf("the leaver ended %v, want CANCELED", g.err)
	}
	eventually(t, "the queue to empty", func() bool { return sg.metric("dynamo_request_queue") == 0 })
	if got := sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", "cancelled_queued"); got != 1 {
		t.Errorf("cancelled_queued = %v, want 1", got)
	}
	if got := sg.metric("dynamo_backend_admission_cancellation_total"); got != 1 {
		t.Errorf("cancellation_total = %v, want 1", got)
	}
	if got := eng.metric("vllm:num_requests_running"); got != 1 {
		t.Errorf("the engine runs %v requests while the holder streams, want 1", got)
	}

	cancelHolder()
	g := <-holder
	if status.Code(g.err) != codes.Canceled || g.chunks == 0 {
		t.Errorf("the holder ended %v after %d chunks, want CANCELED mid-stream", g.err, g.chunks)
	}
	eventually(t, "the engine to abort the holder", func() bool {
		return eng.metric("vllm:num_requests_running") == 0 &&
			eng.metric("vllm:request_success_total", "finished_reason", "abort") == 1
	})
	eventually(t, "the holder's slot freed and counted", func() bool {
		return sg.metric("dynamo_engine_request") == 0 &&
			sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", "cancelled_running") == 1
	})
	t.Logf("the holder streamed %d chunks before it was cancelled", g.chunks)

	if g := generate(ctx, client, genRequest("after", 16, 2), nil); g.err != nil || g.complete.GetFinishReason() != "length" {
		t.Errorf("a call after both cancels: %v, complete %v", g.err, g.complete)
	}
	if eng.admitted("leaver") || !eng.admitted("holder") || !eng.admitted("after") {
		t.Errorf("the engine admitted the leaver %v, the holder %v, the later call %v; want only the last two",
			eng.admitted("leaver"), eng.admitted("holder"), eng.admitted("after"))
	}
	// Every request the engine ever had: the holder (aborted) and the later one.
	if got := eng.metric("vllm:request_success_total"); got != 2 {
		t.Errorf("the engine finished %v requests, want 2", got)
	}
	if got := sg.metric("dynamo_backend_admission_cancellation_total"); got != 1 {
		t.Errorf("cancellation_total = %v at the end, want 1: a running call's cancel is not a queue cancellation", got)
	}
}

// TestGRPCEngineRestart: the gRPC engine's process dies; a call then gets
// slotgate's UNAVAILABLE and frees its slot; once the engine is back on
// the same port, calls succeed again and the slots all come back.
func TestGRPCEngineRestart(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t) // readiness: the HTTP engine stays up
	eng := startGRPCSim(t, "--speedup-ratio", "10")
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.grpcAddr, "--engine-request-limit", "2")
	client := grpcProxyClient(t, sg)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if g := generate(ctx, client, genRequest("before", 8, 3), nil); g.err != nil {
		t.Fatalf("a call before the engine died: %v", g.err)
	}

	eng.kill()
	g := generate(ctx, client, genRequest("lost", 8, 3), nil)
	if st := status.Convert(g.err); st.Code() != codes.Unavailable || st.Message() != "Server unavailable: engine unreachable" {
		t.Errorf("a call with the engine dead: %v, want UNAVAILABLE engine unreachable", g.err)
	}
	if got := sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", "rejected_unavailable"); got != 1 {
		t.Errorf("rejected_unavailable = %v, want 1", got)
	}
	if got := sg.metric("dynamo_rejection_request_total"); got != 0 {
		t.Errorf("a dead engine counted as a capacity rejection: %v", got)
	}
	if got := sg.metric("dynamo_engine_request"); got != 0 {
		t.Errorf("dynamo_engine_request = %v after the failed call, want 0", got)
	}

	down := time.Now()
	eng.restart()
	failed := 0
	eventually(t, "a call to succeed after the restart", func() bool {
		g := generate(ctx, client, genRequest("retry-"+strconv.Itoa(failed), 8, 3), nil)
		if g.err == nil {
			return true
		}
		if status.Code(g.err) != codes.Unavailable {
			t.Fatalf("a call while the engine restarts: %v, want UNAVAILABLE", g.err)
		}
		failed++
		time.Sleep(50 * time.Millisecond) // gRPC's reconnect backoff sets the pace, not this
		return false
	})
	t.Logf("the first call succeeded %v after the restart began, after %d more UNAVAILABLE",
		time.Since(down).Round(time.Millisecond), failed)
	if got := sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", "rejected_unavailable"); got != float64(1+failed) {
		t.Errorf("rejected_unavailable = %v, want %d", got, 1+failed)
	}
	for _, name := range []string{"dynamo_engine_request", "dynamo_request_queue",
		"dynamo_backend_admission_engine_request_count", "dynamo_backend_admission_engine_wait_count"} {
		if got := sg.metric(name); got != 0 {
			t.Errorf("%s = %v after the engine came back, want 0", name, got)
		}
	}
}

// TestGRPCMetadataAndDeadline: the client's metadata, a binary value
// included, reaches the engine through the binary, and the engine's header
// and trailers reach the client; a call's deadline reaches the engine,
// which sees its context end, and the client gets DEADLINE_EXCEEDED.
func TestGRPCMetadataAndDeadline(t *testing.T) {
	t.Parallel()
	httpEng := newEngine(t)
	eng := newEchoEngine(t)
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr, "--engine-request-limit", "2")
	waitReady(t, sg)
	client := testgrpc.NewTestServiceClient(dialGRPC(t, strings.TrimPrefix(sg.proxy, "http://")))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	checkMetadataEcho(ctx, t, client, eng)
	checkDeadlineReachesEngine(ctx, t, client, eng)
	eventually(t, "the held call counted cancelled_running and its slot freed", func() bool {
		return sg.metric("slotgate_requests_total", "protocol", "grpc", "outcome", "cancelled_running") == 1 &&
			sg.metric("dynamo_engine_request") == 0
	})
}

// checkMetadataEcho makes a streaming call with metadata that the engine
// echoes, and checks what the engine and the client got.
func checkMetadataEcho(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient, eng *echoEngine) {
	t.Helper()
	blob := string([]byte{0, 1, 0xfe, 0xff, '\n', 'x'})
	callCtx := metadata.NewOutgoingContext(ctx, metadata.MD{
		echoPrefix + "tenant":   {"acme"},
		echoPrefix + "multi":    {"one", "two"},
		echoPrefix + "blob-bin": {blob},
		"x-request-id":          {"meta-1"},
	})
	stream, err := client.StreamingOutputCall(callCtx, &testgrpc.StreamingOutputCallRequest{
		Payload: &testgrpc.Payload{Body: []byte("p")}, ResponseParameters: []*testgrpc.ResponseParameters{{}, {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	header, err := stream.Header()
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	msgs := 0
	for ; ; msgs++ {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("the call: %v", err)
			}
			break
		}
	}
	got := <-eng.incoming
	want := map[string][]string{"tenant": {"acme"}, "multi": {"one", "two"}, "blob-bin": {blob}}
	for name, v := range want {
		if !slices.Equal(got[echoPrefix+name], v) {
			t.Errorf("the engine got %s%s = %q, want %q", echoPrefix, name, got[echoPrefix+name], v)
		}
		if !slices.Equal(header["header-"+name], v) {
			t.Errorf("the client's header has header-%s = %q, want %q", name, header["header-"+name], v)
		}
		if !slices.Equal(stream.Trailer()["trailer-"+name], v) {
			t.Errorf("the client's trailers have trailer-%s = %q, want %q", name, stream.Trailer()["trailer-"+name], v)
		}
	}
	if !slices.Equal(got["x-request-id"], []string{"meta-1"}) || msgs != 2 {
		t.Errorf("the engine got x-request-id %q and the client %d messages; want meta-1 and 2", got["x-request-id"], msgs)
	}
}

// checkDeadlineReachesEngine makes a unary call with a short deadline,
// which the engine holds, and checks the engine got the deadline and saw
// its context end.
func checkDeadlineReachesEngine(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient, eng *echoEngine) {
	t.Helper()
	const deadline = 200 * time.Millisecond
	dlCtx, dlCancel := context.WithTimeout(ctx, deadline)
	defer dlCancel()
	began := time.Now()
	_, err := client.UnaryCall(dlCtx, &testgrpc.SimpleRequest{})
	took := time.Since(began)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a held call with a %s deadline: %v, want DEADLINE_EXCEEDED", deadline, err)
	}
	var h heldCall
	select {
	case h = <-eng.held:
	case <-time.After(waitLimit):
		t.Fatal("the engine's context never ended")
	}
	t.Logf("deadline %s: the engine got %v of it left, its context ended with %v; the client's call took %v",
		deadline, h.remaining.Round(time.Millisecond), h.ended, took.Round(time.Millisecond))
	if !h.hasDeadline || h.remaining <= 0 || h.remaining > deadline {
		t.Errorf("the engine got a deadline %v with %v left, want one within %s", h.hasDeadline, h.remaining, deadline)
	}
}
