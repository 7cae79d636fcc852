package sim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// TestGRPCGenerate runs requests to their end over a real connection: the
// chunks carry the output tokens in order, each chunk only new ones, the
// complete message repeats them all with the finish reason and the
// counts, and max_tokens, ignore_eos, the seed and the default length
// work as they do over HTTP.
func TestGRPCGenerate(t *testing.T) {
	ids := promptOf(5)
	key := Key(0, 0, []int{256, 257, 258, 259, 260})
	textIDs := TokenizeText("hello world")
	// A long limit without ignore_eos: this key stops early (checked).
	stopKey := key
	stopLen := OutputLen(stopKey, 300, false)
	seed := int64(-3)
	negSeed := uint64(seed) // as the HTTP API reads "seed": -3
	tests := []struct {
		name       string
		opts       Options
		req        *enginepb.GenerateRequest
		key        uint64
		prompt     int
		tokens     int
		finish     string
		wantStream bool
	}{
		{"streaming token ids", Options{}, genReq(ids, 7, true, true), key, 5, 7, FinishLength, true},
		{"non-streaming", Options{}, genReq(ids, 7, true, false), key, 5, 7, FinishLength, false},
		{"text prompt", Options{}, &enginepb.GenerateRequest{
			Input:          &enginepb.GenerateRequest_Text{Text: "hello world"},
			SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(4), IgnoreEos: true}, Stream: true,
		}, Key(0, 0, textIDs), len(textIDs), 4, FinishLength, true},
		{"stop before max_tokens", Options{}, genReq(ids, 300, false, true), stopKey, 5, stopLen, FinishStop, true},
		{"seed", Options{}, &enginepb.GenerateRequest{
			Input:          &enginepb.GenerateRequest_Tokenized{Tokenized: &enginepb.TokenizedInput{InputIds: ids}},
			SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(6), IgnoreEos: true, Seed: proto.Int32(-3), N: 1},
			Stream:         true,
		}, Key(0, negSeed, []int{256, 257, 258, 259, 260}), 5, 6, FinishLength, true},
		{"max_tokens unset: the rest of the model's length", Options{MaxModelLen: 40}, &enginepb.GenerateRequest{
			Input:          &enginepb.GenerateRequest_Tokenized{Tokenized: &enginepb.TokenizedInput{InputIds: ids}},
			SamplingParams: &enginepb.SamplingParams{IgnoreEos: true},
		}, key, 5, 35, FinishLength, false},
		{"no sampling params", Options{MaxModelLen: 40}, &enginepb.GenerateRequest{
			Input: &enginepb.GenerateRequest_Tokenized{Tokenized: &enginepb.TokenizedInput{InputIds: ids}},
		}, key, 5, OutputLen(key, 35, false), FinishReason(OutputLen(key, 35, false), 35), false},
	}
	if stopLen >= 300 {
		t.Fatalf("the stop case does not stop early: %d tokens", stopLen)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.SpeedupRatio = 1000
			s := startGRPC(t, tt.opts, true)
			msgs := s.generateAll(t, tt.req)
			got, done := streamed(t, msgs)
			want := wantIDs(tt.key, tt.tokens)
			if tt.wantStream && !slices.Equal(got, want) {
				t.Errorf("streamed ids %v, want %v", got, want)
			}
			if !tt.wantStream && len(msgs) != 1 {
				t.Errorf("%d messages without stream, want the complete message alone", len(msgs))
			}
			if !slices.Equal(done.GetOutputIds(), want) || done.GetFinishReason() != tt.finish ||
				done.GetPromptTokens() != uint32(tt.prompt) || done.GetCompletionTokens() != uint32(tt.tokens) {
				t.Errorf("complete %v; want %d ids %v, %s, %d prompt tokens", done, tt.tokens, want, tt.finish, tt.prompt)
			}
			for _, m := range msgs[:len(msgs)-1] {
				if m.GetChunk().GetPromptTokens() != uint32(tt.prompt) {
					t.Errorf("chunk %v: prompt_tokens, want %d", m, tt.prompt)
				}
			}
			st := s.engine.Stats().Ranks[0]
			if st.Running != 0 || st.UsedBlocks != 0 || st.Finished[tt.finish] != 1 {
				t.Errorf("after the call: %d running, %d blocks used, finished %v", st.Running, st.UsedBlocks, st.Finished)
			}
		})
	}
}

// The same prompt and seed give the same output over gRPC and over HTTP:
// the complete message's ids are the words of the HTTP answer.
func TestGRPCMatchesHTTP(t *testing.T) {
	e := newEngine(t, Options{SpeedupRatio: 1000})
	runEngine(t, e)
	s := serveGRPC(t, e)
	h, err := NewHandler(ServerOptions{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.generateAll(t, &enginepb.GenerateRequest{
		Input:          &enginepb.GenerateRequest_Text{Text: "the same prompt"},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(9), IgnoreEos: true},
	})
	_, done := streamed(t, msgs)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions",
		strings.NewReader(`{"prompt":"the same prompt","max_tokens":9,"ignore_eos":true}`)))
	var answer struct{ Choices []struct{ Text string } }
	if err := decodeInto(rec.Body.Bytes(), &answer); err != nil || len(answer.Choices) != 1 {
		t.Fatalf("HTTP answer %d %s: %v", rec.Code, rec.Body, err)
	}
	var words []string
	for _, id := range done.GetOutputIds() {
		k := int(id) - firstTextToken
		words = append(words, strings.TrimRight(wordTable[k*wordWidth:(k+1)*wordWidth], " "))
	}
	if got := " " + strings.Join(words, " "); got != answer.Choices[0].Text {
		t.Errorf("gRPC ids spell %q, HTTP answered %q", got, answer.Choices[0].Text)
	}
}

// Over a real connection, on real time: the first message of a stream is
// the first token, and it comes no sooner than the prefill step of a
// 6000-token prompt (about 120 ms); without stream, the complete message
// comes after the whole output.
func TestGRPCFirstMessageAfterPrefill(t *testing.T) {
	const prompt = 6000
	ttft := StepDuration(prompt, false, 0, 1)
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "non-streaming"}[stream], func(t *testing.T) {
			s := startGRPC(t, Options{}, true)
			start := time.Now()
			c, err := s.client.Generate(t.Context(), genReq(promptOf(prompt), 3, true, stream))
			if err != nil {
				t.Fatal(err)
			}
			first, err := c.Recv()
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if elapsed < ttft {
				t.Errorf("first message after %v, before the prefill step's %v", elapsed, ttft)
			}
			switch {
			case stream && len(first.GetChunk().GetTokenIds()) != 1:
				t.Errorf("first message %v, want a chunk of the first token", first)
			case !stream && first.GetComplete().GetCompletionTokens() != 3:
				t.Errorf("first message %v, want the complete message of 3 tokens", first)
			}
			rest, err := recvAll(c)
			if err != nil {
				t.Fatal(err)
			}
			streamed(t, append([]*enginepb.GenerateResponse{first}, rest...))
			t.Logf("first message after %v (prefill step %v)", elapsed, ttft)
		})
	}
}

// Requests the engine can never run are refused with INVALID_ARGUMENT
// before they are queued.
func TestGRPCInvalidRequests(t *testing.T) {
	long := strings.Repeat("x", DefaultMaxModelLen*BytesPerToken)
	tests := []struct {
		name string
		req  *enginepb.GenerateRequest
		msg  string
	}{
		{"no input", &enginepb.GenerateRequest{SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(4)}}, "no input"},
		{"empty text", &enginepb.GenerateRequest{Input: &enginepb.GenerateRequest_Text{}}, "must not be empty"},
		{"no token ids", genReq(nil, 4, false, true), "must not be empty"},
		{"n 2", &enginepb.GenerateRequest{
			Input:          &enginepb.GenerateRequest_Text{Text: "hi"},
			SamplingParams: &enginepb.SamplingParams{N: 2},
		}, "n must be 1"},
		{"max_tokens 0", genReq(promptOf(4), 0, false, true), "max_tokens must be at least 1"},
		{"prompt + max_tokens too long", genReq(promptOf(10), DefaultMaxModelLen, false, true), "too large"},
		{"prompt as long as the model", &enginepb.GenerateRequest{Input: &enginepb.GenerateRequest_Text{Text: long}}, "maximum context length"},
	}
	s := startGRPC(t, Options{}, true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := s.client.Generate(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := recvAll(c)
			checkCode(t, err, codes.InvalidArgument)
			if len(msgs) != 0 || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%d messages, error %v; want none and %q", len(msgs), err, tt.msg)
			}
		})
	}
	if st := s.engine.Stats(); st.Ranks[0].Steps != 0 || st.BeforeFirstTokenMax != 0 {
		t.Errorf("a refused request reached the engine: %+v", st.Ranks[0])
	}
}

// Refusals of requests the engine could run: a request id in flight
// already, a full queue, a stopped engine.
func TestGRPCRefusals(t *testing.T) {
	t.Run("request id in flight", func(t *testing.T) {
		s := startGRPC(t, Options{}, false)
		req := genReq(promptOf(4), 4, false, true)
		req.RequestId = "r1"
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := s.client.Generate(ctx, req); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first request to wait", func() bool { return s.engine.Stats().Ranks[0].Waiting == 1 })
		c, err := s.client.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(c)
		checkCode(t, err, codes.InvalidArgument)
	})
	t.Run("queue full", func(t *testing.T) {
		s := startGRPC(t, Options{MaxNumQueuedReqs: 1}, false)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := s.client.Generate(ctx, genReq(promptOf(4), 4, false, true)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first request to wait", func() bool { return s.engine.Stats().Ranks[0].Waiting == 1 })
		c, err := s.client.Generate(t.Context(), genReq(promptOf(4), 4, false, true))
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(c)
		checkCode(t, err, codes.ResourceExhausted)
	})
	t.Run("engine stopped", func(t *testing.T) {
		e := newEngine(t, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		s := serveGRPC(t, e)
		c, err := s.client.Generate(t.Context(), genReq(promptOf(4), 4, false, true))
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(c)
		checkCode(t, err, codes.Unavailable)
	})
}

// A client that cancels aborts its request: it leaves the batch or the
// queue and its blocks are freed, streaming or not, as over HTTP.
func TestGRPCCancelAborts(t *testing.T) {
	tests := []struct {
		name            string
		stream, running bool
	}{
		{"streaming, running", true, true},
		{"non-streaming, running", false, true},
		{"streaming, waiting", true, false},
		{"non-streaming, waiting", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Speedup 1: 4000 tokens take about 25 s, far longer than the test.
			s := startGRPC(t, Options{}, tt.running)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c, err := s.client.Generate(ctx, genReq(promptOf(100), 4000, true, tt.stream))
			if err != nil {
				t.Fatal(err)
			}
			stats := func() RankStats { return s.engine.Stats().Ranks[0] }
			if tt.running {
				eventually(t, "the request to run", func() bool { return stats().Running == 1 && stats().GenerationTokens > 0 })
			} else {
				eventually(t, "the request to wait", func() bool { return stats().Waiting == 1 })
			}
			if tt.stream && tt.running {
				if m, err := c.Recv(); err != nil || m.GetChunk() == nil {
					t.Fatalf("first message %v, %v", m, err)
				}
			}
			cancel()
			_, err = recvAll(c)
			checkCode(t, err, codes.Canceled)
			eventually(t, "the request to be aborted", func() bool {
				s := stats()
				return s.Running == 0 && s.Waiting == 0 && s.UsedBlocks == 0 && s.Finished[FinishAbort] == 1
			})
		})
	}
}

// Abort ends a request in flight by its id: its stream ends with a
// complete message whose finish reason is "abort", and its blocks are
// freed. Unknown ids are ignored.
func TestGRPCAbort(t *testing.T) {
	s := startGRPC(t, Options{}, true)
	req := genReq(promptOf(100), 4000, true, true)
	req.RequestId = "to-abort"
	c, err := s.client.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Recv(); err != nil || m.GetChunk() == nil {
		t.Fatalf("first message %v, %v", m, err)
	}
	if _, err := s.client.Abort(t.Context(), &enginepb.AbortRequest{RequestIds: []string{"unknown", "to-abort"}}); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	msgs, err := recvAll(c)
	if err != nil {
		t.Fatal(err)
	}
	done := msgs[len(msgs)-1].GetComplete()
	if done.GetFinishReason() != FinishAbort || done.GetCompletionTokens() == 0 || done.GetCompletionTokens() >= 4000 {
		t.Fatalf("last message %v, want a complete message with finish_reason abort", msgs[len(msgs)-1])
	}
	if st := s.engine.Stats().Ranks[0]; st.Running != 0 || st.UsedBlocks != 0 || st.Finished[FinishAbort] != 1 {
		t.Errorf("after Abort: %d running, %d blocks used, finished %v", st.Running, st.UsedBlocks, st.Finished)
	}
	// The id is free again.
	req.SamplingParams.MaxTokens = proto.Uint32(2)
	s.generateAll(t, req)
}

// gRPC requests count in enginesim's gauges of requests before their first
// token, which the HTTP handler of the same engine serves.
func TestGRPCCountsBeforeFirstToken(t *testing.T) {
	e := newEngine(t, Options{})
	s := serveGRPC(t, e)
	h, err := NewHandler(ServerOptions{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 {
		if _, err := s.client.Generate(ctx, genReq(promptOf(8), 4, true, true)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "two requests to wait", func() bool { return e.Stats().Ranks[0].Waiting == 2 })
	checkSeries(t, scrapePath(t, h, OwnMetricsPath), []wantSeries{
		{MetricBeforeFirstToken, nil, dto.MetricType_GAUGE, 2},
		{MetricBeforeFirstTokenMax, nil, dto.MetricType_GAUGE, 2},
	})
	cancel()
	eventually(t, "the requests to be aborted", func() bool { return e.Stats().BeforeFirstToken == 0 })
	checkSeries(t, scrapePath(t, h, OwnMetricsPath), []wantSeries{
		{MetricBeforeFirstToken, nil, dto.MetricType_GAUGE, 0},
		{MetricBeforeFirstTokenMax, nil, dto.MetricType_GAUGE, 2},
	})
}
