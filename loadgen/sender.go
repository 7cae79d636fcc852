package loadgen

import (
	"context"
	"errors"
	"time"
)

// Sentinels a Sender wraps in Answer.Err for an answer with a success
// status that did not complete as expected; the outcome mapper branches on
// them.
var (
	// ErrStreamError: the answer carried an error of its own (an OpenAI
	// error event or error body). Its outcome is "stream_error".
	ErrStreamError = errors.New("stream carried an error event")
	// ErrBadResponse: the answer was not what the protocol says (JSON that
	// does not parse, a stream without its final message). Its outcome is
	// "bad_response".
	ErrBadResponse = errors.New("response is not what was expected")
	// ErrUnanswered: the connection failed before any answer came (refused,
	// reset or closed before the response head): the server may not have
	// seen the request, so the Generator may try it again. Its outcome is
	// "error".
	ErrUnanswered = errors.New("no answer: the connection failed before the response head")
)

// Sender sends one request of a run over some protocol and reads its
// answer to the end. The Generator calls Send from many goroutines at
// once. Options.Sender sets one; by default the Generator sends OpenAI
// HTTP requests itself.
type Sender interface {
	// Send sends req and reads its answer to the end. ctx bounds the
	// request (Options.Timeout, and the cancellation at the drain
	// timeout): when it ends, Send must return promptly, with Err set
	// unless the answer was complete. Send never panics on a bad answer:
	// everything goes into the Answer.
	Send(ctx context.Context, req Request) Answer
	// Target names where the requests go, for the report.
	Target() string
}

// Request is one request of a run: a function of Options.Seed and Index
// alone, so two runs with one seed send the same requests.
type Request struct {
	// Index numbers the request within its run, from 0.
	Index int64
	// Prompt is PromptTokens random words separated by spaces.
	Prompt string
	// PromptTokens is the prompt's length in words, about a token each.
	PromptTokens int
	// MaxTokens is the output length to ask for, with EOS ignored.
	MaxTokens int
	// Stream asks for the answer as a stream (Options.Stream).
	Stream bool
}

// Answer is what came back for one request, as a Sender read it.
type Answer struct {
	// Status is the answer's status as Report.ByStatus counts it: an HTTP
	// status ("200", "529") or a gRPC code name ("OK",
	// "RESOURCE_EXHAUSTED"). Empty when no status came; Err then says why.
	Status string
	// Success says that Status is a success (HTTP 2xx, gRPC OK), after
	// which the answer's content is read. Any other status ends the
	// request as a refusal.
	Success bool
	// Err is why the answer is incomplete: no status came, or the content
	// after a success status broke off. It wraps ErrStreamError or
	// ErrBadResponse to say the answer itself was wrong; any other error
	// counts as "error", or "timeout" or "cancelled" when the request's
	// context had ended. Nil for a complete answer or a refusal.
	Err error
	// Start is when the request was sent; its latencies count from it.
	// Zero means when Send was called.
	Start time.Time
	// Reply is when the content arrived, and its token counts.
	Reply Reply
	// RetryAfter is a refusal's Retry-After as the server sent it (the
	// HTTP header, or gRPC's "retry-after" trailer): delay-seconds or an
	// HTTP date; "" for none. The Generator honours it before the next
	// try.
	RetryAfter string
}

// result is one request's outcome and, when ok, its measurements.
type result struct {
	outcome  string
	answered bool // a status came
	success  bool // and it was a success
	ok       bool // a success with complete content
	reply    Reply
	start    time.Time // of the request's first try

	refused    bool   // a refusal worth another try (see retryable)
	retryAfter string // the refusal's Retry-After
	tries      int    // tries sent
	gaveUp     bool   // ended refused: no try left, or none fits the deadline
	good       bool   // ok within Options.Deadline: counts in the goodput
}

// try sends req once with the Generator's Sender and maps its Answer to
// the outcome. ctx is the run's request context: its cancellation at the
// drain timeout makes the outcome "cancelled"; dctx is the request's,
// ended by Options.Deadline ("deadline"); the try's own context is dctx
// bounded by Options.Timeout ("timeout").
func (g *Generator) try(ctx, dctx context.Context, req Request) result {
	rctx, cancel := dctx, context.CancelFunc(func() {})
	if g.opts.Timeout > 0 {
		rctx, cancel = context.WithTimeout(dctx, g.opts.Timeout)
	}
	defer cancel()
	called := time.Now()
	a := g.sender.Send(rctx, req)
	returned := time.Now()
	if a.Start.IsZero() {
		a.Start = called
	}
	res := result{outcome: a.Status, answered: a.Status != "", success: a.Status != "" && a.Success,
		reply: a.Reply, start: a.Start, retryAfter: a.RetryAfter}
	switch {
	case a.Err != nil && (!res.answered || res.success):
		res.outcome = outcomeOf(ctx, dctx, rctx, a.Err)
		res.refused = !res.answered && res.outcome == OutcomeError && errors.Is(a.Err, ErrUnanswered)
	case !res.answered: // a Sender that said nothing: a bug of its own
		res.outcome = OutcomeError
	default:
		res.ok = res.success
		res.refused = !res.success && retryable(res.outcome)
		if res.ok && res.reply.end.IsZero() {
			res.reply.End(returned)
		}
	}
	return res
}
