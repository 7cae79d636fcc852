package grpcload_test

import (
	"context"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/loadgen/grpcload"
	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
	"github.com/slotgate/slotgate/sim"
)

// TestSimStream runs a closed loop against enginesim's gRPC service: every
// call succeeds, each gives a TTFT and an E2E sample, the token counts are
// the engine's (output exactly max_tokens, with ignore_eos; the prompt as
// the engine tokenized the text).
func TestSimStream(t *testing.T) {
	checkLeaks(t)
	url, _ := startSim(t, sim.Options{SpeedupRatio: 100}, true)
	s := &recording{Sender: newSender(t, url)}
	o := options(s, 12)
	o.Concurrency = 4
	r := runLoad(t, o)
	if !maps.Equal(r.ByStatus, map[string]int64{"OK": 12}) || r.OK != 12 {
		t.Fatalf("by_status = %v, ok = %d; want 12 × OK", r.ByStatus, r.OK)
	}
	var prompt int64
	for _, req := range s.requests() {
		prompt += int64(sim.CountText(req.Prompt))
	}
	if r.TTFT.Count != 12 || r.E2E.Count != 12 || r.OutputTokens != 12*6 || r.PromptTokens != prompt {
		t.Errorf("ttft %d, e2e %d samples, output %d, prompt %d tokens; want 12, 12, %d, %d",
			r.TTFT.Count, r.E2E.Count, r.OutputTokens, r.PromptTokens, 12*6, prompt)
	}
	// A chunk per step, but steps that end between two reads share one.
	if r.ITL.Count < 1 || r.ITL.Count > 12*5 {
		t.Errorf("itl count = %d, want 1..%d", r.ITL.Count, 12*5)
	}
	if r.TTFT.Min <= 0 || r.TTFT.Max > r.E2E.Max || r.MaxConcurrencyObserved > 4 {
		t.Errorf("ttft %+v, e2e %+v, max in flight %d", r.TTFT, r.E2E, r.MaxConcurrencyObserved)
	}
	if want := "grpc://" + strings.TrimPrefix(url, "http://") + "/vllm.grpc.engine.VllmEngine/Generate"; r.Config.Target != want {
		t.Errorf("target = %q, want %q", r.Config.Target, want)
	}
}

// TestSimNoStream: without stream the complete message is the whole
// answer: one TTFT, no gaps, the counts still the engine's.
func TestSimNoStream(t *testing.T) {
	checkLeaks(t)
	url, _ := startSim(t, sim.Options{SpeedupRatio: 100}, true)
	o := options(newSender(t, url), 4)
	o.Stream = false
	r := runLoad(t, o)
	if r.OK != 4 || r.TTFT.Count != 4 || r.ITL.Count != 0 || r.OutputTokens != 4*6 {
		t.Errorf("ok %d, ttft %d, itl %d samples, output %d tokens; want 4, 4, 0, 24",
			r.OK, r.TTFT.Count, r.ITL.Count, r.OutputTokens)
	}
}

// TestSimRefusal: a full queue's RESOURCE_EXHAUSTED is counted by its code
// name. The engine does not run, so the one call it queues waits until
// the drain timeout cancels it, while the other worker's calls are all
// refused.
func TestSimRefusal(t *testing.T) {
	checkLeaks(t)
	url, _ := startSim(t, sim.Options{MaxNumQueuedReqs: 1}, false)
	o := options(newSender(t, url), 4)
	o.DrainTimeout = 100 * time.Millisecond
	r := runLoad(t, o)
	if want := map[string]int64{"RESOURCE_EXHAUSTED": 3, "cancelled": 1}; !maps.Equal(r.ByStatus, want) || r.OK != 0 {
		t.Errorf("by_status = %v, ok = %d; want %v, 0", r.ByStatus, r.OK, want)
	}
}

// TestSimStopped: a stopped engine's UNAVAILABLE is the server's answer,
// counted by its code, unlike a server that is not there (TestNoServer).
func TestSimStopped(t *testing.T) {
	checkLeaks(t)
	e, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	svc, err := sim.NewGRPCService(sim.GRPCOptions{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	r := runLoad(t, options(newSender(t, serve(t, svc.Register)), 3))
	if want := map[string]int64{"UNAVAILABLE": 3}; !maps.Equal(r.ByStatus, want) {
		t.Errorf("by_status = %v, want %v", r.ByStatus, want)
	}
}

// TestTimeout: a call that outlives Options.Timeout is a "timeout", not
// the DEADLINE_EXCEEDED that gRPC reports for it.
func TestTimeout(t *testing.T) {
	checkLeaks(t)
	url, _ := startSim(t, sim.Options{}, false)
	o := options(newSender(t, url), 1)
	o.Timeout = 100 * time.Millisecond
	r := runLoad(t, o)
	if want := map[string]int64{"timeout": 1}; !maps.Equal(r.ByStatus, want) {
		t.Errorf("by_status = %v, want %v", r.ByStatus, want)
	}
}

// TestNoServer: with nothing listening, gRPC says UNAVAILABLE, but no
// server said it: the outcome is "error", as over HTTP.
func TestNoServer(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := runLoad(t, options(newSender(t, "http://"+addr), 3))
	if want := map[string]int64{"error": 3}; !maps.Equal(r.ByStatus, want) {
		t.Errorf("by_status = %v, want %v", r.ByStatus, want)
	}
}

// TestFakeStreams checks the measurements on streams of known shapes.
func TestFakeStreams(t *testing.T) {
	type gen = func(*enginepb.GenerateRequest, grpc.ServerStreamingServer[enginepb.GenerateResponse]) error
	send := func(msgs ...*enginepb.GenerateResponse) gen {
		return func(_ *enginepb.GenerateRequest, s grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
			for _, m := range msgs {
				if err := s.Send(m); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name           string
		generate       gen
		status         string
		ttft, itl      int
		output, prompt int64
	}{
		{"chunks and complete", send(chunk(1), chunk(2), chunk(3, 4), chunk(5), complete(7, 9, 1, 2, 3, 4, 5)),
			"OK", 1, 3, 9, 7},
		{"chunks without tokens are not tokens", send(chunk(), chunk(1), chunk(), chunk(2), complete(3, 2, 1, 2)),
			"OK", 1, 1, 2, 3},
		{"complete alone", send(complete(3, 4, 1, 2, 3, 4)), "OK", 1, 0, 4, 3},
		{"no complete", send(chunk(1), chunk(2)), loadgen.OutcomeBadResponse, 0, 0, 0, 0},
		{"refused, with retry-after", func(_ *enginepb.GenerateRequest, s grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
			s.SetTrailer(metadata.Pairs("retry-after", "1"))
			return status.Error(codes.ResourceExhausted, "Server overloaded: worker at capacity")
		}, "RESOURCE_EXHAUSTED", 0, 0, 0, 0},
		{"fails after tokens", func(req *enginepb.GenerateRequest, s grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
			if err := s.Send(chunk(1)); err != nil {
				return err
			}
			return status.Error(codes.Internal, "boom")
		}, "INTERNAL", 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			f := &fakeEngine{generate: tc.generate}
			o := options(newSender(t, f.start(t)), 3)
			r := runLoad(t, o)
			if want := map[string]int64{tc.status: 3}; !maps.Equal(r.ByStatus, want) {
				t.Fatalf("by_status = %v, want %v", r.ByStatus, want)
			}
			if r.TTFT.Count != 3*tc.ttft || r.ITL.Count != 3*tc.itl || r.OutputTokens != 3*tc.output || r.PromptTokens != 3*tc.prompt {
				t.Errorf("ttft %d, itl %d samples, output %d, prompt %d tokens; want %d, %d, %d, %d",
					r.TTFT.Count, r.ITL.Count, r.OutputTokens, r.PromptTokens, 3*tc.ttft, 3*tc.itl, 3*tc.output, 3*tc.prompt)
			}
			// No retries, retry-after or not: one call per request.
			if n := len(f.requests()); n != 3 {
				t.Errorf("the engine got %d calls, want 3", n)
			}
		})
	}
}

// TestRequests: each call carries the request's prompt as text, its
// max_tokens, ignore_eos, the stream setting and a request id of its own.
func TestRequests(t *testing.T) {
	checkLeaks(t)
	f := &fakeEngine{generate: func(_ *enginepb.GenerateRequest, s grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
		return s.Send(complete(1, 1, 1))
	}}
	url := f.start(t)
	for _, stream := range []bool{true, false} {
		s := &recording{Sender: newSender(t, url)}
		o := options(s, 4)
		o.Stream = stream
		runLoad(t, o)
		prompts := map[string]bool{}
		for _, req := range s.requests() {
			prompts[req.Prompt] = true
		}
		ids := map[string]bool{}
		for _, req := range f.requests() {
			if req.GetStream() == stream {
				ids[req.GetRequestId()] = true
			}
			if !prompts[req.GetText()] && req.GetStream() == stream {
				t.Errorf("the engine got the prompt %q, not one loadgen sent", req.GetText())
			}
			sp := req.GetSamplingParams()
			if sp.MaxTokens == nil || sp.GetMaxTokens() != 6 || !sp.GetIgnoreEos() || !strings.HasPrefix(req.GetRequestId(), "loadgen-") {
				t.Errorf("the engine got %v", req)
			}
		}
		if len(ids) != 4 {
			t.Errorf("stream %v: %d distinct request ids for 4 calls: %v", stream, len(ids), ids)
		}
	}
	// Two Senders' ids differ too: they may share a server.
	if reqs := f.requests(); len(reqs) == 8 && reqs[0].GetRequestId()[:19] == reqs[7].GetRequestId()[:19] {
		t.Errorf("two Senders share the id prefix of %q and %q", reqs[0].GetRequestId(), reqs[7].GetRequestId())
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url, want string
	}{
		{"http://127.0.0.1:50051", "127.0.0.1:50051"},
		{"http://localhost:8080/", "localhost:8080"},
		{" http://[::1]:9092 ", "[::1]:9092"},
		{"127.0.0.1:50051", ""},
		{"https://h:443", ""},
		{"grpc://h:1", ""},
		{"http://h", ""},
		{"http://:80", ""},
		{"http://h:0", ""},
		{"http://h:70000", ""},
		{"http://h:1/v1", ""},
		{"http://h:1/?x=1", ""},
		{"http://h:1?", ""},
		{"http://h:1#f", ""},
		{"http://u:p@h:1", ""},
		{"", ""},
	} {
		got, err := grpcload.ParseURL(tc.url)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
		}
	}
	if _, err := grpcload.New(grpcload.Options{URL: "127.0.0.1:1"}); err == nil {
		t.Error("New accepted a URL without a scheme")
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
		codes.Unavailable: "UNAVAILABLE", codes.Unauthenticated: "UNAUTHENTICATED", 17: "CODE_17", 1 << 31: "CODE_2147483648",
	} {
		if got := grpcload.CodeName(c); got != want {
			t.Errorf("CodeName(%d) = %q, want %q", c, got, want)
		}
	}
}

// The Sender is a loadgen.Sender.
var _ loadgen.Sender = (*grpcload.Sender)(nil)
