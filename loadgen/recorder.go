package loadgen

import (
	"sync"
	"sync/atomic"
	"time"
)

// recorder collects one run's outcomes. The counters progress reads are
// atomics; the samples are under mu.
type recorder struct {
	sent, done, ok, rejected, failed, dropped atomic.Int64
	inFlight, maxInFlight                     atomic.Int64
	outputTokens                              atomic.Int64
	tries, timedOut, gaveUp, good             atomic.Int64
	okFirstTry                                atomic.Int64

	mu           sync.Mutex
	byStatus     map[string]int64
	ttft         []time.Duration
	itl          []time.Duration
	e2e          []time.Duration
	promptTokens int64
}

func newRecorder() *recorder {
	return &recorder{byStatus: map[string]int64{}}
}

// begin counts a request about to be sent.
func (r *recorder) begin() {
	r.sent.Add(1)
	r.raiseMax(r.inFlight.Add(1))
}

// tryBegin is begin unless limit requests are already in flight; then it
// sends nothing and reports false.
func (r *recorder) tryBegin(limit int64) bool {
	for {
		n := r.inFlight.Load()
		if n >= limit {
			return false
		}
		if r.inFlight.CompareAndSwap(n, n+1) {
			r.sent.Add(1)
			r.raiseMax(n + 1)
			return true
		}
	}
}

func (r *recorder) raiseMax(n int64) {
	for {
		m := r.maxInFlight.Load()
		if n <= m || r.maxInFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// record ends a request begun with begin or tryBegin.
func (r *recorder) record(res result) {
	switch {
	case res.ok:
		r.ok.Add(1)
		if res.tries == 1 {
			r.okFirstTry.Add(1)
		}
		r.outputTokens.Add(int64(res.reply.outputTokens()))
	case !res.answered || res.success:
		r.failed.Add(1) // no answer, or a success that broke off
	default:
		r.rejected.Add(1) // a status other than a success
	}
	r.tries.Add(int64(res.tries))
	if res.outcome == OutcomeDeadline {
		r.timedOut.Add(1)
	}
	if res.gaveUp {
		r.gaveUp.Add(1)
	}
	if res.good {
		r.good.Add(1)
	}
	r.mu.Lock()
	r.byStatus[res.outcome]++
	if res.ok {
		rep := &res.reply
		if !rep.first.IsZero() {
			r.ttft = append(r.ttft, rep.first.Sub(res.start))
		}
		r.itl = append(r.itl, rep.gaps...)
		r.e2e = append(r.e2e, rep.end.Sub(res.start))
		r.promptTokens += int64(rep.promptTokens())
	}
	r.mu.Unlock()
	r.inFlight.Add(-1)
	r.done.Add(1)
}

// snapshot is what progress shows.
type snapshot struct {
	sent, done, ok, rejected, failed, dropped, inFlight, outputTokens int64
}

func (r *recorder) snapshot() snapshot {
	return snapshot{
		sent: r.sent.Load(), done: r.done.Load(), ok: r.ok.Load(),
		rejected: r.rejected.Load(), failed: r.failed.Load(), dropped: r.dropped.Load(),
		inFlight: r.inFlight.Load(), outputTokens: r.outputTokens.Load(),
	}
}
