package sim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Through the Generate handler, on the bubble's clock: a 6000-token prompt
// counts before its first token from its arrival through the whole
// prefill step, and nothing is sent before that step ends. A stream's
// first message is then the first token, sent at that very instant, and
// every later step sends one chunk of its one token when it ends; without
// stream the complete message alone comes at the end. A client that
// leaves before its first token leaves the count at once.
func TestBeforeFirstTokenOverGRPC(t *testing.T) {
	tests := []struct {
		name           string
		stream, leaves bool
	}{
		{"streaming", true, false},
		{"non-streaming", false, false},
		{"streaming, client leaves", true, true},
		{"non-streaming, client leaves", false, true},
	}
	const prompt, maxTokens = 6000, 8
	ttft := StepDuration(prompt, false, 0, 1)
	// Each decode step: 6001 to 6008 tokens hold 376 of 16383 blocks.
	decode := StepDuration(0, true, 376.0/(DefaultNumGPUBlocks-1), 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, Options{})
				runEngine(t, e)
				g, err := NewGRPCService(GRPCOptions{Engine: e})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				fs := newFakeStream(ctx)
				done := make(chan error, 1)
				go func() {
					done <- (engineServer{g: g}).Generate(genReq(promptOf(prompt), maxTokens, true, tt.stream), fs)
				}()
				check := func(when string, want counts, wantSent int) {
					t.Helper()
					synctest.Wait()
					if got := engineCounts(e); got != want {
						t.Fatalf("%s: count %d, max %d; want %d, %d", when, got.n, got.max, want.n, want.max)
					}
					if msgs, _ := fs.sent(); len(msgs) != wantSent {
						t.Fatalf("%s: %d messages sent, want %d: %v", when, len(msgs), wantSent, msgs)
					}
				}
				check("on arrival", counts{1, 1}, 0)
				time.Sleep(ttft - time.Nanosecond)
				check("just before the prefill step ends", counts{1, 1}, 0)
				if tt.leaves {
					cancel()
					if err := <-done; status.Code(err) != codes.Canceled {
						t.Fatalf("Generate after the client left: %v, want CANCELED", err)
					}
					check("after the client left", counts{0, 1}, 0)
					if n := e.Stats().Ranks[0].Finished[FinishAbort]; n != 1 {
						t.Fatalf("%d requests aborted, want 1", n)
					}
					return
				}
				time.Sleep(time.Nanosecond)
				first := 0
				if tt.stream {
					first = 1
				}
				check("when the prefill step ends", counts{0, 1}, first)
				if err := <-done; err != nil {
					t.Fatalf("Generate: %v", err)
				}
				msgs, times := fs.sent()
				wantTimes := []time.Duration{}
				if tt.stream {
					for i := range maxTokens {
						wantTimes = append(wantTimes, ttft+time.Duration(i)*decode)
					}
				}
				wantTimes = append(wantTimes, ttft+(maxTokens-1)*decode) // the complete message
				if len(msgs) != len(wantTimes) {
					t.Fatalf("%d messages, want %d: %v", len(msgs), len(wantTimes), msgs)
				}
				for i, m := range msgs[:len(msgs)-1] {
					if ids := m.GetChunk().GetTokenIds(); len(ids) != 1 || ids[0] != uint32(TokenID(Key(0, 0, ints(promptOf(prompt))), i)) {
						t.Errorf("message %d is %v, want a chunk of token %d alone", i, m, i)
					}
				}
				for i, at := range times {
					if d := at - wantTimes[i]; d < -time.Microsecond || d > time.Microsecond {
						t.Errorf("message %d sent at %v, want %v (prefill %v, decode steps of %v)", i, at, wantTimes[i], ttft, decode)
					}
				}
				if c := msgs[len(msgs)-1].GetComplete(); c.GetCompletionTokens() != maxTokens || c.GetFinishReason() != FinishLength {
					t.Errorf("last message %v, want the complete message", msgs[len(msgs)-1])
				}
			})
		})
	}
}

func ints(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
