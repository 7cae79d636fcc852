package grpcload_test

import (
	"errors"
	"maps"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/loadgen/grpcload"
	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// TestRetryRefusals: a RESOURCE_EXHAUSTED or UNAVAILABLE refusal's
// retry-after trailer is the Answer's RetryAfter, and loadgen tries the
// call again after it, as slotgate's proxy asks.
func TestRetryRefusals(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		t.Run(grpcload.CodeName(code), func(t *testing.T) {
			checkLeaks(t)
			var calls atomic.Int64
			f := &fakeEngine{generate: func(_ *enginepb.GenerateRequest, s grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
				if calls.Add(1) <= 2 {
					// A fraction of a second, which loadgen accepts, keeps
					// the test short; slotgate sends whole seconds.
					s.SetTrailer(metadata.Pairs(grpcload.RetryAfterKey, "0.01"))
					return status.Error(code, "Server overloaded: worker at capacity")
				}
				return s.Send(complete(1, 1, 1))
			}}
			s := newSender(t, f.start(t))
			a := s.Send(t.Context(), loadgen.Request{Prompt: "hi", PromptTokens: 1, MaxTokens: 1})
			if a.Status != grpcload.CodeName(code) || a.RetryAfter != "0.01" || a.Err != nil {
				t.Fatalf("Send: status %q, retry-after %q, err %v; want %q, \"0.01\", nil",
					a.Status, a.RetryAfter, a.Err, grpcload.CodeName(code))
			}
			o := options(s, 1)
			o.Retry = 3
			r := runLoad(t, o)
			if want := map[string]int64{"OK": 1}; !maps.Equal(r.ByStatus, want) || r.Tries != 2 {
				t.Errorf("by_status %v, tries %d; want %v, 2 (one refusal left, then served)", r.ByStatus, r.Tries, want)
			}
		})
	}
}

// TestUnanswered: a call with nothing listening failed on its connection
// before any answer: its error wraps loadgen.ErrUnanswered, so loadgen may
// try it again, and its outcome stays "error".
func TestUnanswered(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSender(t, "http://"+addr)
	a := s.Send(t.Context(), loadgen.Request{Prompt: "hi", PromptTokens: 1, MaxTokens: 1})
	if a.Status != "" || !errors.Is(a.Err, loadgen.ErrUnanswered) {
		t.Fatalf("Send: status %q, err %v; want none, and an error wrapping ErrUnanswered", a.Status, a.Err)
	}
	o := options(s, 1)
	o.Retry = 2
	r := runLoad(t, o)
	if want := map[string]int64{loadgen.OutcomeError: 1}; !maps.Equal(r.ByStatus, want) || r.Tries != 2 || r.GaveUp != 1 {
		t.Errorf("by_status %v, tries %d, gave_up %d; want %v, 2, 1", r.ByStatus, r.Tries, r.GaveUp, want)
	}
}
