package limiter

import (
	"math"
	"sync/atomic"
)

// maxTokens is the most prompt tokens one request counts for: with it, the
// sums of tokens stay far from overflowing an int64.
const maxTokens = 1 << 40

// clampTokens is a token count as the limiter counts it: within [0,
// maxTokens].
func clampTokens(n int64) int64 {
	return min(max(n, 0), maxTokens)
}

// requestTokens is the tokens req holds now: the larger of Request.Tokens
// and its TokenCount. Called with l.mu held, so a count read here and one
// raised later are both seen (TokenCount.Raise).
func requestTokens(req Request) int64 {
	t := req.Tokens
	if req.TokenCount != nil {
		t = max(t, req.TokenCount.n.Load())
	}
	return clampTokens(t)
}

// fitsLocked reports whether a request of t tokens fits the prefill-token
// budget: beside the tokens in prefill, or alone when there are none, so
// that a request larger than P is never starved nor refused for its size.
// A request of no tokens always fits: it adds nothing to prefill, even
// beside an oversized prompt or above a lowered P.
func (l *Limiter) fitsLocked(t int64) bool {
	return t == 0 || t <= l.prefillLimit-l.prefillTokens || l.prefillTokens == 0
}

// nextFitsLocked reports whether the tokens of the waiter next in order
// fit the budget; l.waiting > 0. It looks at the waiter only when the
// budget is set and in use.
func (l *Limiter) nextFitsLocked() bool {
	if l.prefillTokens == 0 || l.prefillLimit == math.MaxInt64 {
		return true
	}
	w := l.queue.peek()
	if l.lifoNext {
		w = l.queue.peekNewest()
	}
	return l.fitsLocked(w.tokens)
}

// TokenCount is a request's prompt-token count that may still grow while
// the request waits, for a caller that counts a body as it arrives (the
// HTTP proxy does not: it reads the whole body before it asks).
// Use one per request: the zero value counts 0; set it in
// Request.TokenCount and call Raise, from any goroutine, as the count
// grows.
//
// The request holds the larger of Request.Tokens and the count as it
// stands at each step: at arrival, for the admission and the queue's
// token limit; while it waits, where each Raise adds to the queued tokens
// at once; and at its grant, which fixes what it holds in prefill. Raises
// after the grant (or after the request left the queue) change nothing,
// so P stays exact.
//
// A Raise never refuses nor removes a request that already waits: growth
// may take the queued tokens beyond QueueTokenLimit, and newcomers are
// then refused until the queued tokens are below it again. The growth of
// the next waiter in order may also make it wait for more room in P.
type TokenCount struct {
	n atomic.Int64 // the count, only ever raised
	// l is the limiter the request queued in, set before the count is
	// read there, so that a Raise either is seen by that read or finds l
	// and updates the waiter itself.
	l atomic.Pointer[Limiter]
	// w is the waiting request, nil when it does not wait; guarded by
	// l.mu.
	w *waiter
}

// Raise makes the count n if n is larger; smaller values change nothing.
// While the request waits, its queued tokens grow at once.
func (c *TokenCount) Raise(n int64) {
	for {
		old := c.n.Load()
		if n <= old {
			return
		}
		if c.n.CompareAndSwap(old, n) {
			break
		}
	}
	l := c.l.Load()
	if l == nil {
		return // not queued yet: the limiter reads the count when it is
	}
	l.mu.Lock()
	if c.w != nil {
		l.growLocked(c.w, clampTokens(c.n.Load()))
	}
	l.mu.Unlock()
}

// attachLocked links c to w, which has just entered l's queue, and counts
// what the count has grown to since the arrival read it.
func (c *TokenCount) attachLocked(l *Limiter, w *waiter) {
	c.l.Store(l) // before the read below: see the field's comment
	c.w, w.count = w, c
	l.growLocked(w, clampTokens(c.n.Load()))
}

// growLocked raises waiting w's tokens to t, counting the growth in the
// queued tokens; a smaller t changes nothing. Growth only makes w harder
// to fit, so it never admits anybody.
func (l *Limiter) growLocked(w *waiter, t int64) {
	if d := t - w.tokens; d > 0 {
		w.tokens = t
		l.queuedTokens += d
		w.cls.queuedTokens += d
	}
}
