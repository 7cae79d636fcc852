package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Outcomes other than an HTTP status; see the package documentation.
const (
	OutcomeError       = "error"
	OutcomeTimeout     = "timeout"
	OutcomeCancelled   = "cancelled"
	OutcomeStreamError = "stream_error"
	OutcomeBadResponse = "bad_response"
)

// result is one request's outcome and, when ok, its measurements.
type result struct {
	outcome string
	status  int  // the HTTP status; 0 when none came
	ok      bool // 2xx with a complete body
	reply   reply
	start   time.Time
}

// newClient returns the run's one client: HTTP/1.1 only (one connection per
// request in flight, as engines and slotgate see real clients), enough idle
// connections kept for every request in flight to reuse one, no
// compression (it would buffer the stream), and no proxy from the
// environment.
func newClient(inFlight int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.ForceAttemptHTTP2 = false
	var p http.Protocols
	p.SetHTTP1(true)
	t.Protocols = &p
	t.MaxIdleConns = 0 // no overall limit
	t.MaxIdleConnsPerHost = inFlight
	t.DisableCompression = true
	return &http.Client{Transport: t}
}

// send sends request i and reads its answer to the end. ctx is the run's
// request context: its cancellation at the drain timeout makes the outcome
// "cancelled".
func (g *Generator) send(ctx context.Context, i int64) result {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if g.opts.Timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, g.opts.Timeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, g.target,
		bytes.NewReader(body(&g.opts, shapeOf(&g.opts, i))))
	if err != nil {
		return result{outcome: OutcomeError}
	}
	req.Header.Set("Content-Type", "application/json")
	if g.opts.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if g.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+g.opts.APIKey)
	}
	start := time.Now()
	resp, err := g.client.Do(req)
	if err != nil {
		return result{outcome: outcomeOf(ctx, rctx, err), start: start}
	}
	defer closeBody(resp.Body)
	res := result{outcome: strconv.Itoa(resp.StatusCode), status: resp.StatusCode, start: start}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return res
	}
	res.reply, err = readReply(resp.Header.Get("Content-Type"), resp.Body, time.Now)
	if err != nil {
		res.outcome = outcomeOf(ctx, rctx, err)
		return res
	}
	res.ok = true
	return res
}

// outcomeOf maps a failed request to its outcome: the one function that
// decides between a broken answer, cancellation, timeout and other errors.
// ctx is the run's request context, rctx the request's own.
func outcomeOf(ctx, rctx context.Context, err error) string {
	switch {
	case errors.Is(err, errStreamError):
		return OutcomeStreamError
	case errors.Is(err, errBadResponse):
		return OutcomeBadResponse
	case ctx.Err() != nil:
		return OutcomeCancelled
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return OutcomeTimeout
	}
	return OutcomeError
}

// closeBody reads what is left of a body, up to a bound, so the connection
// can carry the next request, then closes it.
func closeBody(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 256<<10))
	_ = b.Close()
}
