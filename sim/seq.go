package sim

import (
	"context"
	"errors"
)

// Finish reasons, as OpenAI and vLLM name them.
const (
	FinishLength = "length"
	FinishStop   = "stop"
	FinishAbort  = "abort"
)

// Errors of Submit and Handle.Wait.
var (
	// ErrQueueFull: the chosen rank already holds MaxNumQueuedReqs requests
	// (running + waiting). The server answers 503, as vllm-project/vllm#49445.
	ErrQueueFull = errors.New("engine queue full")
	// ErrTooLong: prompt + max_tokens exceeds MaxModelLen.
	ErrTooLong = errors.New("request longer than the maximum model length")
	// ErrInvalid: a request with no prompt tokens or no output tokens.
	ErrInvalid = errors.New("invalid request")
	// ErrStopped: the engine's Run has returned; unfinished requests fail
	// with it and new ones are refused.
	ErrStopped = errors.New("engine stopped")
)

// Request is what the engine needs of one generation request.
type Request struct {
	// PromptTokens is the prompt length, at least 1.
	PromptTokens int
	// MaxTokens is the output limit, at least 1.
	MaxTokens int
	// IgnoreEOS makes the output exactly MaxTokens long.
	IgnoreEOS bool
	// Key seeds the output (see Key and OutputLen).
	Key uint64
}

type seqState uint8

const (
	stateWaiting seqState = iota
	stateRunning
	stateFinished
)

// seq is one request inside a rank. Every field but notify is guarded by
// the rank's mutex.
type seq struct {
	prompt   int // prompt tokens
	limit    int // max_tokens
	target   int // tokens it will generate, at most limit
	output   int // tokens generated so far
	computed int // tokens whose KV is computed
	blocks   int // KV blocks held

	state     seqState
	preempted bool // waiting because it was preempted
	counted   bool // its prompt tokens were counted in the metrics
	finish    string
	err       error

	// notify gets a token, without blocking, whenever output or state
	// changes; its one buffered place means a signal is never lost.
	notify chan struct{}
}

func newSeq(req Request) *seq {
	return &seq{
		prompt: req.PromptTokens,
		limit:  req.MaxTokens,
		target: OutputLen(req.Key, req.MaxTokens, req.IgnoreEOS),
		notify: make(chan struct{}, 1),
	}
}

// total is the sequence's known length: prompt and output so far.
func (s *seq) total() int { return s.prompt + s.output }

func (s *seq) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Progress is what a request has produced so far.
type Progress struct {
	// Tokens is the number of output tokens generated so far.
	Tokens int
	// Done is set once the request ended; FinishReason then says why:
	// FinishLength, FinishStop or FinishAbort.
	Done         bool
	FinishReason string
}

// Handle is a submitted request. Its methods are not for concurrent use by
// several goroutines, except Close, which may be called at any time.
type Handle struct {
	r    *rank
	s    *seq
	seen int
}

// Rank is the data-parallel rank the request was assigned to.
func (h *Handle) Rank() int { return h.r.id }

// Wait blocks until the request produced tokens beyond those of the last
// Wait, or ended, and returns its progress. It returns ctx.Err() if ctx
// ends first, and ErrStopped if the engine stopped before the request
// ended; the request is not aborted by either: call Close.
func (h *Handle) Wait(ctx context.Context) (Progress, error) {
	for {
		h.r.mu.Lock()
		p := Progress{Tokens: h.s.output, Done: h.s.state == stateFinished, FinishReason: h.s.finish}
		err := h.s.err
		h.r.mu.Unlock()
		if err != nil {
			return p, err
		}
		if p.Tokens > h.seen || p.Done {
			h.seen = p.Tokens
			return p, nil
		}
		select {
		case <-h.s.notify:
		case <-ctx.Done():
			return p, ctx.Err()
		}
	}
}

// Close aborts the request if it has not ended: it leaves the waiting queue
// or the running batch at once and its blocks are freed before Close
// returns. Closing an ended request does nothing.
func (h *Handle) Close() {
	h.r.abort(h.s)
}
