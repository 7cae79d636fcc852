package sim

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// grpcAnswer is what a client saw of one Generate call.
type grpcAnswer struct {
	msgs  []*enginepb.GenerateResponse
	times []time.Duration // since the call, of each message
	err   error           // what ended the call, nil for a clean end
}

func (a grpcAnswer) chunks() (tokens int, complete bool) {
	for _, m := range a.msgs {
		tokens += len(m.GetChunk().GetTokenIds())
		complete = complete || m.GetComplete() != nil
	}
	return tokens, complete
}

// generate runs one Generate call with a timeout and times its messages.
func generate(t *testing.T, s *grpcTestServer, req *enginepb.GenerateRequest, timeout time.Duration) grpcAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	stream, err := s.client.Generate(ctx, req)
	if err != nil {
		return grpcAnswer{err: err}
	}
	var a grpcAnswer
	for {
		m, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				a.err = err
			}
			return a
		}
		a.msgs = append(a.msgs, m)
		a.times = append(a.times, time.Since(start))
	}
}

// Each fault over gRPC Generate, streamed and not: what the client sees,
// that the engine is left holding nothing, and that the fault was counted.
func TestFaultsOverGRPC(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		stream    bool
		maxTokens uint32
		timeout   time.Duration
		check     func(t *testing.T, a grpcAnswer, st RankStats)
	}{
		{"error", FaultError, true, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, st RankStats) {
			if status.Code(a.err) != codes.Internal || len(a.msgs) != 0 || status.Convert(a.err).Message() != faultErrorMessage {
				t.Fatalf("%d messages, then %v; want INTERNAL at once", len(a.msgs), a.err)
			}
			if st.Steps != 0 {
				t.Fatalf("the engine ran the refused request: %d steps", st.Steps)
			}
		}},
		{"reset, streamed", FaultReset, true, 200, 10 * time.Second, func(t *testing.T, a grpcAnswer, st RankStats) {
			n, complete := a.chunks()
			if status.Code(a.err) != codes.Unavailable || complete || n < 100 || n == 200 {
				t.Fatalf("%d tokens, complete %v, then %v; want half of 200, then UNAVAILABLE", n, complete, a.err)
			}
			if st.Finished[FinishAbort] != 1 {
				t.Fatalf("finished %v; want the request aborted, as a cancelled one", st.Finished)
			}
		}},
		{"reset, not streamed", FaultReset, false, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, _ RankStats) {
			if status.Code(a.err) != codes.Unavailable || len(a.msgs) != 0 {
				t.Fatalf("%d messages, then %v; want UNAVAILABLE alone", len(a.msgs), a.err)
			}
		}},
		{"stall, streamed", FaultStall, true, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, _ RankStats) {
			n, complete := a.chunks()
			gap, before, next := longestGap(a.times)
			// The gap is read at the client, where a late receipt of the
			// message before the stall shortens it: the bound that holds
			// is the message after it, which the engine sends only once
			// the stall's time has passed since the request came.
			if a.err != nil || n != 8 || !complete || gap < testPause/2 || before < 4 || next < testPause {
				t.Fatalf("%d tokens, complete %v, %v; longest gap %v after %d messages, the next at %v; want a stall of %v after 4",
					n, complete, a.err, gap, before, next, testPause)
			}
		}},
		{"stall, not streamed", FaultStall, false, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, _ RankStats) {
			if a.err != nil || len(a.msgs) != 1 || a.times[0] < testPause {
				t.Fatalf("%d messages at %v, %v; want the complete message after %v", len(a.msgs), a.times, a.err, testPause)
			}
		}},
		{"slow first token, streamed", FaultSlowFirstToken, true, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, _ RankStats) {
			if n, complete := a.chunks(); a.err != nil || n != 8 || !complete || a.times[0] < testPause {
				t.Fatalf("%d tokens, complete %v, %v, first at %v; want all after %v", n, complete, a.err, a.times, testPause)
			}
		}},
		{"slow first token, not streamed", FaultSlowFirstToken, false, 8, 10 * time.Second, func(t *testing.T, a grpcAnswer, _ RankStats) {
			if a.err != nil || len(a.msgs) != 1 || a.times[0] < testPause {
				t.Fatalf("%d messages at %v, %v; want the complete message after %v", len(a.msgs), a.times, a.err, testPause)
			}
		}},
		{"never end, streamed", FaultNeverEnd, true, 8, 500 * time.Millisecond, func(t *testing.T, a grpcAnswer, st RankStats) {
			if n, complete := a.chunks(); status.Code(a.err) != codes.DeadlineExceeded || n != 8 || complete {
				t.Fatalf("%d tokens, complete %v, then %v; want 8 tokens and no end until the deadline", n, complete, a.err)
			}
			if st.Finished[FinishLength] != 1 {
				t.Fatalf("finished %v; want the engine done with it", st.Finished)
			}
		}},
		{"never end, not streamed", FaultNeverEnd, false, 8, 500 * time.Millisecond, func(t *testing.T, a grpcAnswer, _ RankStats) {
			if status.Code(a.err) != codes.DeadlineExceeded || len(a.msgs) != 0 {
				t.Fatalf("%d messages, then %v; want nothing until the deadline", len(a.msgs), a.err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, Options{})
			runEngine(t, e)
			f := mustFaults(t, certain(tt.fault), 1)
			s := serveGRPCWith(t, GRPCOptions{Engine: e, Faults: f})
			a := generate(t, s, genReq(promptOf(8), tt.maxTokens, true, tt.stream), tt.timeout)
			st := settled(t, e)
			tt.check(t, a, st.Ranks[0])
			for k, n := range f.Injected() {
				if want := map[bool]uint64{true: 1}[k == tt.fault]; n != want {
					t.Errorf("%s counted %d times, want %d", k, n, want)
				}
			}
			if st.InFlightMax != 1 {
				t.Errorf("in flight at most %d, want 1", st.InFlightMax)
			}
		})
	}
}

// sentMsg is a message of a Generate stream: a chunk of tokens, or the
// complete message (tokens 0), and when it was sent.
type sentMsg struct {
	tokens int
	at     time.Duration
}

// On the bubble's clock, through the Generate handler: a stall pauses the
// stream once, by exactly its length, right after the chunk that reaches
// half the output, while the engine goes on (the rest then comes in one
// chunk); a slow first token holds the first chunk back by exactly its
// delay. Faults.Shutdown cuts a stall short and lets a never-ending stream
// end with its complete message.
func TestFaultTimingOverGRPC(t *testing.T) {
	const maxTokens = 8
	ttft := StepDuration(8, false, 0, 1)
	d := StepDuration(0, true, 1.0/(DefaultNumGPUBlocks-1), 1) // each decode step
	const p = testPause
	tests := []struct {
		name     string
		fault    Fault
		shutdown time.Duration // when Faults.Shutdown is called; 0: never
		want     []sentMsg
	}{
		{"stall", FaultStall, 0, []sentMsg{
			{1, ttft}, {1, ttft + d}, {1, ttft + 2*d}, {1, ttft + 3*d}, {4, ttft + 3*d + p}, {0, ttft + 3*d + p},
		}},
		{"slow first token", FaultSlowFirstToken, 0, []sentMsg{{1, ttft + p}, {7, ttft + p}, {0, ttft + p}}},
		{"stall cut short", FaultStall, ttft + 3*d + p/2, []sentMsg{
			{1, ttft}, {1, ttft + d}, {1, ttft + 2*d}, {1, ttft + 3*d}, {4, ttft + 3*d + p/2}, {0, ttft + 3*d + p/2},
		}},
		{"never end until shutdown", FaultNeverEnd, time.Hour, []sentMsg{
			{1, ttft}, {1, ttft + d}, {1, ttft + 2*d}, {1, ttft + 3*d}, {1, ttft + 4*d}, {1, ttft + 5*d}, {1, ttft + 6*d}, {1, ttft + 7*d},
			{0, time.Hour},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, Options{})
				runEngine(t, e)
				f := mustFaults(t, certain(tt.fault), 1)
				g, err := NewGRPCService(GRPCOptions{Engine: e, Faults: f})
				if err != nil {
					t.Fatal(err)
				}
				fs := newFakeStream(t.Context())
				done := make(chan error, 1)
				go func() { done <- (engineServer{g: g}).Generate(genReq(promptOf(8), maxTokens, true, true), fs) }()
				if tt.shutdown > 0 {
					time.Sleep(tt.shutdown)
					f.Shutdown()
				}
				if err := <-done; err != nil {
					t.Fatalf("Generate: %v", err)
				}
				msgs, times := fs.sent()
				var got []sentMsg
				for i, m := range msgs {
					got = append(got, sentMsg{len(m.GetChunk().GetTokenIds()), times[i]})
				}
				if len(got) != len(tt.want) {
					t.Fatalf("sent %v, want %v", got, tt.want)
				}
				for i, w := range tt.want {
					if dt := got[i].at - w.at; got[i].tokens != w.tokens || dt < -time.Microsecond || dt > time.Microsecond {
						t.Fatalf("message %d: %d tokens at %v, want %d at %v (all: %v)", i, got[i].tokens, got[i].at, w.tokens, w.at, got)
					}
				}
			})
		})
	}
}
