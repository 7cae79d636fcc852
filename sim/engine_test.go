package sim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// runEngine starts e.Run in the test's bubble (or not) and stops it at
// cleanup, waiting for it to return.
func runEngine(t *testing.T, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitDone waits for h to end and returns its final progress.
func waitDone(t *testing.T, h *Handle) Progress {
	t.Helper()
	for {
		p, err := h.Wait(t.Context())
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if p.Done {
			return p
		}
	}
}

// TestStepTiming checks the time a request takes in the bubble's clock
// against the mocker's polynomials, restated by hand: one prefill step of
// the prompt, which samples the first token, then one decode step per
// further token.
func TestStepTiming(t *testing.T) {
	tests := []struct {
		name    string
		prompt  int
		tokens  int
		speedup float64
	}{
		{"16 tokens", 4, 16, 1},
		{"long prompt", 1000, 4, 1},
		{"speedup 100", 4, 16, 100},
		{"speedup 0.5", 4, 3, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const blocks = 16384
				e := newEngine(t, Options{SpeedupRatio: tt.speedup, NumGPUBlocks: blocks})
				runEngine(t, e)
				start := time.Now()
				h := submit(t, e, Request{PromptTokens: tt.prompt, MaxTokens: tt.tokens, IgnoreEOS: true})
				p := waitDone(t, h)
				elapsed := time.Since(start)

				p0 := float64(tt.prompt)
				wantMs := 16.50142 + 0.01518344*p0 + 4.209989e-07*p0*p0
				for n := tt.prompt + 1; n < tt.prompt+tt.tokens; n++ { // decode with n tokens known
					u := float64((n+15)/16) / (blocks - 1)
					wantMs += 5.74 + 54.01*u - 25.74*u*u
				}
				want := time.Duration(wantMs / tt.speedup * float64(time.Millisecond))
				if d := elapsed - want; d < -time.Duration(tt.tokens) || d > time.Duration(tt.tokens) {
					t.Errorf("the request took %v, want %v", elapsed, want)
				}
				if p.Tokens != tt.tokens || p.FinishReason != FinishLength {
					t.Errorf("progress %+v", p)
				}
			})
		})
	}
}

// With --speedup-ratio 100, a 16-token request finishes well under 100 ms.
func TestFastRequestsAreFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{SpeedupRatio: 100})
		runEngine(t, e)
		start := time.Now()
		waitDone(t, submit(t, e, Request{PromptTokens: 100, MaxTokens: 16, IgnoreEOS: true}))
		if d := time.Since(start); d > 5*time.Millisecond {
			t.Fatalf("a 16-token request took %v at speedup 100", d)
		}
	})
}

// Requests of a batch share each forward pass: two together take about
// as long as one alone, not twice as long.
func TestBatchSharesSteps(t *testing.T) {
	elapsed := func(n int) time.Duration {
		var d time.Duration
		synctest.Test(t, func(t *testing.T) {
			e := newEngine(t, Options{})
			start := time.Now()
			var hs []*Handle
			for range n {
				hs = append(hs, submit(t, e, Request{PromptTokens: 8, MaxTokens: 32, IgnoreEOS: true}))
			}
			runEngine(t, e) // after the submissions: they start in one step
			for _, h := range hs {
				waitDone(t, h)
			}
			d = time.Since(start)
		})
		return d
	}
	one, two := elapsed(1), elapsed(2)
	if two > one*11/10 {
		t.Fatalf("two batched requests took %v, one alone %v", two, one)
	}
}

func TestWaitStreamsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{})
		runEngine(t, e)
		h := submit(t, e, Request{PromptTokens: 8, MaxTokens: 5, IgnoreEOS: true})
		var seen []int
		for {
			p, err := h.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, p.Tokens)
			if p.Done {
				break
			}
		}
		if want := []int{1, 2, 3, 4, 5}; !equal(seen, want) {
			t.Fatalf("Wait returned token counts %v, want one step at a time %v", seen, want)
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Close frees a running request's blocks at once, while the loop is in
// the middle of a step.
func TestCloseDuringRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{})
		runEngine(t, e)
		h := submit(t, e, Request{PromptTokens: 100, MaxTokens: 1000, IgnoreEOS: true})
		if _, err := h.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s := e.Stats().Ranks[0]; s.Running != 1 || s.UsedBlocks == 0 {
			t.Fatalf("before Close: %+v", s)
		}
		h.Close()
		if s := e.Stats().Ranks[0]; s.Running != 0 || s.Waiting != 0 || s.UsedBlocks != 0 || s.Finished[FinishAbort] != 1 {
			t.Fatalf("right after Close: %+v", s)
		}
		if p, err := h.Wait(t.Context()); err != nil || !p.Done || p.FinishReason != FinishAbort {
			t.Fatalf("Wait after Close: %+v, %v", p, err)
		}
	})
}

func TestWaitHonoursContext(t *testing.T) {
	e := newEngine(t, Options{}) // not running: the request waits for ever
	h := submit(t, e, Request{PromptTokens: 4, MaxTokens: 4})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	if s := e.Stats().Ranks[0]; s.Waiting != 1 {
		t.Fatalf("Wait's context aborted the request: %+v", s)
	}
}

// When Run returns, unfinished requests fail with ErrStopped and new ones
// are refused; Run cannot start twice.
func TestRunStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{DataParallelSize: 2, MaxNumSeqs: 1})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		var hs []*Handle
		for range 4 {
			hs = append(hs, submit(t, e, Request{PromptTokens: 4, MaxTokens: 1000, IgnoreEOS: true}))
		}
		time.Sleep(100 * time.Millisecond) // fake time: some steps run
		if err := e.Run(ctx); err == nil {
			t.Error("a second Run did not fail")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !e.Stopped() {
			t.Error("Stopped() is false after Run returned")
		}
		for i, h := range hs {
			if _, err := h.Wait(t.Context()); !errors.Is(err, ErrStopped) {
				t.Errorf("request %d: Wait = %v, want ErrStopped", i, err)
			}
		}
		if _, err := e.Submit(Request{PromptTokens: 4, MaxTokens: 4}); !errors.Is(err, ErrStopped) {
			t.Errorf("Submit after Run: %v, want ErrStopped", err)
		}
		for _, s := range e.Stats().Ranks {
			if s.Running+s.Waiting != 0 || s.UsedBlocks != 0 {
				t.Errorf("rank %d after stop: %+v", s.Rank, s)
			}
		}
	})
}

// Preemption under a real loop: a pool too small for the batch still
// completes every request.
func TestRunWithPreemption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, Options{NumGPUBlocks: 9, BlockSize: 16, MaxModelLen: 128, MaxNumSeqs: 4, MaxNumBatchedTokens: 64})
		var hs []*Handle
		for range 4 {
			hs = append(hs, submit(t, e, Request{PromptTokens: 30, MaxTokens: 60, IgnoreEOS: true}))
		}
		runEngine(t, e)
		for _, h := range hs {
			if p := waitDone(t, h); p.Tokens != 60 {
				t.Fatalf("a request ended with %d tokens", p.Tokens)
			}
		}
		s := e.Stats().Ranks[0]
		if s.Preemptions == 0 || s.UsedBlocks != 0 || s.GenerationTokens != 240 {
			t.Fatalf("after the run: %+v", s)
		}
	})
}
