package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The waits between tries, as the OpenAI SDKs wait (openai-python
// _base_client.py, _calculate_retry_timeout): a Retry-After from above 0
// to 60 s is honoured as it is; otherwise retry n (0 for the first) waits
// min(0.5 s × 2ⁿ, 8 s), less a jitter of up to a quarter.
const (
	firstRetryWait = 500 * time.Millisecond
	maxRetryWait   = 8 * time.Second
	maxRetryAfter  = 60 * time.Second
	maxJitter      = 0.25
)

// backoffStream is the second half of the backoff PRNG's seed, with the
// request index: a stream of its own, apart from the request's lengths and
// text (requestOf), so that a retry changes nothing of what is sent.
const backoffStream = 0x6261636b6f6666 // "backoff"

// retryable says whether a refusal's status is worth another try: the
// overload and unavailable answers that say "not now", never a bad request
// or a server error.
func retryable(status string) bool {
	switch status {
	case "429", "503", "529", "RESOURCE_EXHAUSTED", "UNAVAILABLE":
		return true
	}
	return false
}

// send sends request i, tries it again while it is refused, up to
// Options.Retry tries, and returns the last try's outcome. ctx is the
// run's request context. Options.Deadline bounds all the tries and the
// waits between them, counted from the first send; a wait that would end
// at or after the deadline is not begun: the request gives up at once with
// its last refusal, since waiting could only end it as "deadline" later,
// and a client that knows its deadline does not wait for nothing.
func (g *Generator) send(ctx context.Context, i int64) result {
	req := requestOf(&g.opts, i)
	first := time.Now()
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if g.opts.Deadline > 0 {
		dctx, cancel = context.WithDeadline(ctx, first.Add(g.opts.Deadline))
	}
	defer cancel()
	var (
		rng    *rand.Rand // made at the first retry: most requests need none
		origin time.Time  // the first try's start
	)
	for n := 1; ; n++ {
		res := g.try(ctx, dctx, req)
		res.tries = n
		if n == 1 {
			origin = res.start
		}
		res.start = origin // latencies count what the user waited: every try
		if !res.refused {
			res.good = res.ok && (g.opts.Deadline <= 0 || !res.reply.end.After(first.Add(g.opts.Deadline)))
			return res
		}
		if n >= g.opts.Retry {
			res.gaveUp = true
			return res
		}
		if rng == nil {
			rng = rand.New(rand.NewPCG(g.opts.Seed, uint64(i)^backoffStream))
		}
		wait := retryWait(n-1, res.retryAfter, time.Now(), rng)
		if d, ok := dctx.Deadline(); ok && !time.Now().Add(wait).Before(d) {
			res.gaveUp = true
			return res
		}
		if !sleep(dctx, wait) {
			return result{outcome: outcomeOf(ctx, dctx, dctx, dctx.Err()), start: origin, tries: n}
		}
	}
}

// retryWait is how long to wait before retry n (0 for the first): the
// refusal's Retry-After when it says from above 0 to 60 s, else the
// exponential backoff with jitter drawn from rng. now reads an HTTP date.
func retryWait(n int, retryAfter string, now time.Time, rng *rand.Rand) time.Duration {
	if d, ok := parseRetryAfter(retryAfter, now); ok {
		return d
	}
	d := maxRetryWait
	if n < 5 { // 0.5 s × 2⁵ is past the cap already; no shift overflows
		d = min(firstRetryWait<<n, maxRetryWait)
	}
	return time.Duration(float64(d) * (1 - maxJitter*rng.Float64()))
}

// parseRetryAfter reads a Retry-After (RFC 9110 §10.2.3): delay-seconds,
// here with a fraction allowed as the OpenAI SDKs allow one, or an HTTP
// date, counted from now. It reports false for anything else, and for a
// wait of 0 or less or above 60 s, which the SDKs do not honour either.
func parseRetryAfter(s string, now time.Time) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var d time.Duration
	if isDecimal(s) {
		sec, err := strconv.ParseFloat(s, 64)
		if err != nil || sec > maxRetryAfter.Seconds() {
			return 0, false
		}
		d = time.Duration(sec * float64(time.Second))
	} else {
		at, err := http.ParseTime(s)
		if err != nil {
			return 0, false
		}
		d = at.Sub(now)
	}
	return d, d > 0 && d <= maxRetryAfter
}

// isDecimal accepts digits with at most one '.', and at least one digit:
// what ParseFloat reads as a plain number, without signs, exponents,
// infinities or hexadecimal.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range []byte(s) {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// sleep waits d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
