package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slotgate/slotgate/limiter"
)

// tokenExposition is the two token gauges, prefill then queued.
const tokenExposition = `
# HELP slotgate_prefill_tokens Prompt tokens of the requests admitted to the engine that have not had their first token yet (those bounded by --engine-prefill-token-limit), all ranks together; 0 while no token limit is set, as tokens are not counted then.
# TYPE slotgate_prefill_tokens gauge
slotgate_prefill_tokens %d
# HELP slotgate_queued_tokens Prompt tokens of the requests waiting in slotgate's queue (those bounded by --request-queue-token-limit), all ranks together; 0 while no token limit is set, as tokens are not counted then.
# TYPE slotgate_queued_tokens gauge
slotgate_queued_tokens %d
`

// TestTokenGaugesFollowLiveLimiter drives a real limiter with a prefill
// token budget P=1000 and reads the token gauges after each step: they
// exist at 0 before any request, count what is in prefill and what is
// queued, and go back to 0.
func TestTokenGaugesFollowLiveLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := limiter.New(limiter.Options{Slots: 4, QueueLen: 4, PrefillTokenLimit: 1000, QueueTokenLimit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		_, reg := newMetrics(t, l.Stats)
		check := func(step string, prefill, queued int) {
			t.Helper()
			want := fmt.Sprintf(tokenExposition, prefill, queued)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
				"slotgate_prefill_tokens", "slotgate_queued_tokens"); err != nil {
				t.Errorf("%s: %v", step, err)
			}
		}
		check("idle", 0, 0)

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		first, err := l.AcquireRequest(ctx, limiter.Request{Tokens: 600})
		if err != nil {
			t.Fatal(err)
		}
		check("600 tokens in prefill", 600, 0)

		// 600 more do not fit beside the first 600 in P=1000: they wait.
		var wg sync.WaitGroup
		var second *limiter.Permit
		wg.Go(func() {
			p, err := l.AcquireRequest(ctx, limiter.Request{Tokens: 600})
			if err != nil {
				t.Errorf("second request: %v", err)
			}
			second = p
		})
		synctest.Wait()
		check("600 in prefill, 600 queued", 600, 600)

		first.FirstToken() // its tokens leave prefill, which admits the second
		wg.Wait()
		check("first decoding, second in prefill", 600, 0)

		second.FirstToken()
		first.Release()
		second.Release()
		check("all done", 0, 0)
	})
}

// TestTokenGaugesZeroWithoutTokenLimit: a limiter without a token limit,
// and one that passes everything, read 0: the gauges exist from the start.
func TestTokenGaugesZeroWithoutTokenLimit(t *testing.T) {
	l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, stats := range map[string]func() limiter.Stats{"no token limit": l.Stats, "unlimited": limiter.NewUnlimited().Stats} {
		_, reg := newMetrics(t, stats)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(tokenExposition, 0, 0)),
			"slotgate_prefill_tokens", "slotgate_queued_tokens"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
