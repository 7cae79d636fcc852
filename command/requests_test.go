package command

import (
	"reflect"
	"sync"
	"testing"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/report"
)

// tokenLimits are the limits of each limiter in the requestsOf tests:
// N=4, Q=4, P=1000 and 4000 queued tokens.
var tokenLimits = limiter.Options{Slots: 4, QueueLen: 4, PrefillTokenLimit: 1000, QueueTokenLimit: 4000}

// admitTokens admits requests of the given prompt tokens into l, in
// order; they stay in prefill, or queued where P has no room, until the
// test ends.
func admitTokens(t *testing.T, l *limiter.Limiter, tokens ...int64) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after t.Context() ends, which ends the waits
	for _, n := range tokens {
		queued := make(chan struct{})
		wg.Go(func() {
			// Queued requests stay queued until the test's context ends.
			p, err := l.AcquireRequest(t.Context(), limiter.Request{Tokens: n, OnQueued: func() { close(queued) }})
			if err == nil {
				close(queued)
				t.Cleanup(p.Release)
			}
		})
		<-queued // admitted or queued: the next one comes after it
	}
}

// TestRequestsOfTokens: the published admission state carries each
// limiter's prompt tokens in prefill and queued and its token limits,
// and with limits per rank the totals are the sums of the ranks.
func TestRequestsOfTokens(t *testing.T) {
	var made []*limiter.Limiter
	ranked, err := gate.RankLimiters(2, func() (*limiter.Limiter, error) {
		l, err := limiter.New(tokenLimits)
		made = append(made, l)
		return l, err
	})
	if err != nil {
		t.Fatal(err)
	}
	admitTokens(t, made[0], 600, 300, 700) // 900 in prefill, 700 queued
	admitTokens(t, made[1], 1500, 200)     // one too large alone, then 200 queued
	rank := func(i, inFlight, queued int, prefill, queuedTokens int64) report.RankRequests {
		return report.RankRequests{DPRank: i, InFlight: inFlight, Queued: queued, Prefilling: inFlight,
			Limit: 4, QueueLimit: 4, PrefillTokens: prefill, QueuedTokens: queuedTokens,
			PrefillTokenLimit: 1000, QueueTokenLimit: 4000}
	}
	want := report.Requests{
		InFlight: 3, Queued: 2, Prefilling: 3, Limit: 8, QueueLimit: 8,
		PrefillTokens: 2400, QueuedTokens: 900, PrefillTokenLimit: 2000, QueueTokenLimit: 8000,
		Ranks: []report.RankRequests{rank(0, 2, 1, 900, 700), rank(1, 1, 1, 1500, 200)},
	}
	if got := requestsOf(ranked)(); !reflect.DeepEqual(got, want) {
		t.Errorf("per rank:\n got %+v\nwant %+v", got, want)
	}

	engine, err := limiter.New(tokenLimits)
	if err != nil {
		t.Fatal(err)
	}
	admitTokens(t, engine, 800, 500)
	want = report.Requests{InFlight: 1, Queued: 1, Prefilling: 1, Limit: 4, QueueLimit: 4,
		PrefillTokens: 800, QueuedTokens: 500, PrefillTokenLimit: 1000, QueueTokenLimit: 4000}
	if got := requestsOf(gate.EngineLimiter(engine))(); !reflect.DeepEqual(got, want) {
		t.Errorf("one limiter:\n got %+v\nwant %+v", got, want)
	}
}
