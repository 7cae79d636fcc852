package e2e_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenRun sends each prompt (of the given token ids counts) as a streamed
// completion at once, through a slotgate started with args in front of a
// slow enginesim (chunked prefill), and returns the streams and the most
// requests the engine had before their first token at once.
func tokenRun(t *testing.T, prompts []int, args ...string) ([]stream, float64) {
	t.Helper()
	eng := startEnginesim(t, enginesimSlow...)
	sg := start(t, eng, nil, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	streams := make([]stream, len(prompts))
	var wg sync.WaitGroup
	for i, n := range prompts {
		wg.Go(func() {
			streams[i] = streamCompletion(ctx, sg.proxy, "p"+strconv.Itoa(i), longPrompt(n), 4)
		})
	}
	wg.Wait()
	for _, s := range streams {
		if s.err != nil || s.status != http.StatusOK || s.firstToken.IsZero() {
			t.Fatalf("%s: status %d, error %v, first token %v", s.id, s.status, s.err, s.firstToken)
		}
	}
	_, text := get(t, eng+"/enginesim/metrics")
	return streams, promValue(t, text, "enginesim_requests_before_first_token_max")
}

// TestPrefillTokenBudget: with --engine-prefill-token-limit 1000 and
// token-id prompts (counted exactly), the engine never has more prompt
// tokens in prefill than that, by its own count of requests before their
// first token: prompts of 600 tokens never overlap, prompts of 200 run at
// most five at a time. Without the budget the same 600-token prompts do
// overlap, so the first case can fail.
func TestPrefillTokenBudget(t *testing.T) {
	t.Parallel()
	budget := []string{"--engine-request-limit", "8", "--request-queue-limit", "16", "--engine-prefill-token-limit", "1000"}
	for _, tc := range []struct {
		name      string
		prompts   []int
		args      []string
		atMost    float64
		atLeast   float64
		overlapOK bool
	}{
		{name: "600-token prompts never overlap", prompts: []int{600, 600, 600, 600}, args: budget, atMost: 1, atLeast: 1},
		{name: "200-token prompts five at a time", prompts: []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200},
			args: budget, atMost: 5, atLeast: 2},
		{name: "no budget: 600-token prompts overlap", prompts: []int{600, 600, 600, 600},
			args: []string{"--engine-request-limit", "8", "--request-queue-limit", "16"}, atMost: 4, atLeast: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, most := tokenRun(t, tc.prompts, tc.args...)
			t.Logf("the engine's most requests before their first token at once: %v", most)
			if most > tc.atMost || most < tc.atLeast {
				t.Errorf("the engine had at most %v requests before their first token at once, want %v to %v", most, tc.atLeast, tc.atMost)
			}
		})
	}
}

// TestOversizedPromptRunsAlone: a 1500-token prompt, over P=1000, is
// admitted when nothing else is in prefill, and the short prompts that
// arrive while it is in prefill wait for its first token.
func TestOversizedPromptRunsAlone(t *testing.T) {
	t.Parallel()
	eng := startEnginesim(t, enginesimSlow...)
	sg := start(t, eng, nil, "--engine-request-limit", "8", "--request-queue-limit", "16", "--engine-prefill-token-limit", "1000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var long stream
	var wg sync.WaitGroup
	wg.Go(func() { long = streamCompletion(ctx, sg.proxy, "long", longPrompt(1500), 4) })
	eventually(t, "the long prompt admitted", func() bool {
		return sg.metric("dynamo_backend_admission_engine_request_count") == 1
	})
	short := make([]stream, 3)
	for i := range short {
		wg.Go(func() { short[i] = streamCompletion(ctx, sg.proxy, "short-"+strconv.Itoa(i), longPrompt(200), 4) })
	}
	wg.Wait()
	if long.err != nil || long.status != http.StatusOK || long.firstToken.IsZero() {
		t.Fatalf("long: status %d, error %v", long.status, long.err)
	}
	for _, s := range short {
		if s.err != nil || s.status != http.StatusOK {
			t.Fatalf("%s: status %d, error %v", s.id, s.status, s.err)
		}
		if s.firstToken.Before(long.firstToken) {
			t.Errorf("%s had its first token %v before the long prompt's", s.id, long.firstToken.Sub(s.firstToken))
		}
	}
}

// TestQueueTokenLimit: with --request-queue-token-limit 1000, a prompt
// that would take the queued tokens past it is refused at once with the
// overload answer and reason queue_tokens, counted as
// rejected_queue_tokens; one that fits is queued.
func TestQueueTokenLimit(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	e.hold()
	sg := start(t, e.url(), nil, "--engine-request-limit", "1", "--request-queue-limit", "8", "--request-queue-token-limit", "1000")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	body := func(n int) string { return `{"prompt":` + longPrompt(n) + `,"max_tokens":1}` }
	var wg sync.WaitGroup
	for i, n := range []int{10, 600} { // one runs, held; one waits with 600 tokens
		wg.Go(func() { post(ctx, http.DefaultClient, sg.proxy, "held-"+strconv.Itoa(i), body(n)) })
		eventually(t, "request "+strconv.Itoa(i)+" in", func() bool {
			return sg.metric("dynamo_backend_admission_request_receive_total") == float64(i+1)
		})
	}
	eventually(t, "one queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })
	r := post(ctx, http.DefaultClient, sg.proxy, "over", body(401))
	if r.status != 529 || r.header.Get("X-Slotgate-Reason") != "queue_tokens" || !strings.Contains(r.body, "Server overloaded:") {
		t.Errorf("401 more tokens: %d, reason %q, %s; want 529 queue_tokens", r.status, r.header.Get("X-Slotgate-Reason"), r.body)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_queue_tokens"); got != 1 {
		t.Errorf("rejected_queue_tokens = %v, want 1", got)
	}
	fits := make(chan result, 1)
	wg.Go(func() { fits <- post(ctx, http.DefaultClient, sg.proxy, "fits", body(400)) })
	eventually(t, "the 400-token prompt queued", func() bool { return sg.metric("dynamo_request_queue") == 2 })
	e.release()
	wg.Wait()
	if r := <-fits; r.status != http.StatusOK {
		t.Errorf("the prompt that fits: %d %s", r.status, r.body)
	}
}
