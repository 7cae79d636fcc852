package grpcproxy_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/grpcproxy"
	"github.com/slotgate/slotgate/limiter"
)

// loadKey is where a per-call ORCA load report travels.
const loadKey = "endpoint-load-metrics-bin"

// trailerHook is an Options.Trailer that counts its calls. Besides the
// load report it sets a key the engine's trailers carry too, whose value
// it must replace.
func trailerHook(calls *atomic.Int64) func() metadata.MD {
	return func() metadata.MD {
		calls.Add(1)
		return metadata.Pairs(loadKey, "\x0a\x01\x00", "x-engine-trailer", "slotgate")
	}
}

// TestTrailerHook: every kind of call forwarded to the engine, served or
// failed by it, carries the hook's metadata beside the engine's trailers,
// replacing a key both carry; the hook is called once per call.
func TestTrailerHook(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}, trailer: trailerHook(&calls)})
	for _, k := range kinds(t) {
		for _, b := range []struct {
			name string
			md   []string
			code codes.Code
		}{
			{"served", nil, codes.OK},
			{"engine fails", []string{keyFail, strconv.Itoa(int(codes.FailedPrecondition))}, codes.FailedPrecondition},
		} {
			t.Run(k.name+"/"+b.name, func(t *testing.T) {
				ctx := metadata.AppendToOutgoingContext(testContext(t), b.md...)
				before := calls.Load()
				r := k.run(ctx, t, h.client)
				if r.st.Code() != b.code {
					t.Fatalf("status %v, want %v", r.st, b.code)
				}
				wantMD(t, "trailer", r.tr, loadKey, "\x0a\x01\x00")
				wantMD(t, "trailer", r.tr, "x-engine-trailer", "slotgate") // the hook's key wins
				wantMD(t, "trailer", r.tr, "x-engine-trailer-bin", "\x00\x01")
				if n := calls.Load() - before; n != 1 {
					t.Errorf("the hook was called %d times for one call, want once", n)
				}
				h.idle(t)
			})
		}
	}
}

// TestTrailerHookNotOnRefusals: a call the gate refuses carries the
// refusal's trailers and none of the hook's, which is not called; the
// admitted call beside it carries them.
func TestTrailerHookNotOnRefusals(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, config{lim: limiter.Options{Slots: 1}, trailer: trailerHook(&calls)})
	held := make(chan streamResult, 1)
	go func() {
		held <- streamCall(metadata.AppendToOutgoingContext(testContext(t), keyHold, "start"), h.client, 1)
	}()
	eventually(t, "one call at the engine", func() bool { return h.eng.inFlight.Load() == 1 })

	r := streamCall(testContext(t), h.client, 1)
	wantStatus(t, r.err, codes.ResourceExhausted, gate.MessageCapacity)
	wantMD(t, "refusal trailer", r.tr, grpcproxy.ReasonKey, "capacity")
	if v, ok := r.tr[loadKey]; ok {
		t.Errorf("refusal trailer %s = %q, want none", loadKey, v)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the hook was called %d times before any call ended at the engine, want 0", n)
	}

	h.eng.release("start")
	a := <-held
	if a.err != nil || a.msgs != 1 {
		t.Fatalf("held call: %d messages, %v; want 1, OK", a.msgs, a.err)
	}
	wantMD(t, "trailer", a.tr, loadKey, "\x0a\x01\x00")
	if n := calls.Load(); n != 1 {
		t.Errorf("the hook was called %d times, want once", n)
	}
	h.idle(t)
}
