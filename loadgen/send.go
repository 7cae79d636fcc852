package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcomes other than a status; see the package documentation.
const (
	OutcomeError       = "error"
	OutcomeTimeout     = "timeout"
	OutcomeCancelled   = "cancelled"
	OutcomeStreamError = "stream_error"
	OutcomeBadResponse = "bad_response"
	OutcomeDeadline    = "deadline"
)

// httpSender is the default Sender: OpenAI completion requests over
// HTTP/1.1.
type httpSender struct {
	opts   *Options
	target string // URL + Endpoint
	client *http.Client
}

func newHTTPSender(o *Options, inFlight int) *httpSender {
	return &httpSender{opts: o, target: strings.TrimSuffix(o.URL, "/") + o.Endpoint, client: newClient(inFlight)}
}

func (s *httpSender) Target() string { return s.target }

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

// Send sends req and reads its answer to the end: the status, and after a
// 2xx the body.
func (s *httpSender) Send(ctx context.Context, req Request) Answer {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target, bytes.NewReader(body(s.opts, req)))
	if err != nil {
		return Answer{Err: err, Start: time.Now()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	if s.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+s.opts.APIKey)
	}
	a := Answer{Start: time.Now()}
	resp, err := s.client.Do(hreq)
	if err != nil {
		// Do fails only before the response head: nothing was answered.
		a.Err = fmt.Errorf("%w: %w", ErrUnanswered, err)
		return a
	}
	defer closeBody(resp.Body)
	a.Status = strconv.Itoa(resp.StatusCode)
	a.Success = resp.StatusCode >= 200 && resp.StatusCode <= 299
	if !a.Success {
		a.RetryAfter = resp.Header.Get("Retry-After")
		return a
	}
	a.Reply, a.Err = readReply(resp.Header.Get("Content-Type"), resp.Body, time.Now)
	return a
}

// outcomeOf maps a failed try to its outcome: the one function that
// decides between a broken answer, cancellation, the deadline, timeout and
// other errors. ctx is the run's request context, dctx the request's (with
// Options.Deadline), rctx the try's own (with Options.Timeout).
func outcomeOf(ctx, dctx, rctx context.Context, err error) string {
	switch {
	case errors.Is(err, ErrStreamError):
		return OutcomeStreamError
	case errors.Is(err, ErrBadResponse):
		return OutcomeBadResponse
	case ctx.Err() != nil:
		return OutcomeCancelled
	case errors.Is(dctx.Err(), context.DeadlineExceeded):
		return OutcomeDeadline
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
