package sim

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// genInput is a validated generation request.
type genInput struct {
	chat            bool
	prompt          int
	maxTokens       int
	ignoreEOS       bool
	stream          bool
	includeUsage    bool
	continuousUsage bool
	key             uint64
}

// generate serves /v1/completions (chat false) and /v1/chat/completions.
// The request is submitted before anything is written, so refusals are
// plain JSON errors; it is aborted when the handler returns, which frees
// its blocks at once if the client left or a fault cut the answer. It
// counts in flight (inflight.go) from its start, and draws its fault once
// it is valid: an injected error is answered before it is submitted.
func (s *server) generate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		end := s.engine.trackInFlight(r.Context())
		defer end()
		var req genRequest
		if e := decodeBody(w, r, &req); e != nil {
			writeAPIError(w, e)
			return
		}
		in, e := s.input(&req, chat)
		if e != nil {
			writeAPIError(w, e)
			return
		}
		plan := s.faults.plan(in)
		if plan.fails() {
			writeError(w, http.StatusInternalServerError, faultErrorMessage)
			return
		}
		h, err := s.engine.Submit(Request{PromptTokens: in.prompt, MaxTokens: in.maxTokens, IgnoreEOS: in.ignoreEOS, Key: in.key})
		if err != nil {
			e := submitError(err, s.engine.Options())
			if ce := s.log.Check(zap.DebugLevel, "request refused"); ce != nil {
				ce.Write(zap.String("path", r.URL.Path), zap.Int("status", e.status), zap.Error(err))
			}
			writeAPIError(w, e)
			return
		}
		defer h.Close()
		plan.done = func() { h.Close(); end() }
		if ce := s.log.Check(zap.DebugLevel, "request admitted"); ce != nil {
			ce.Write(zap.String("path", r.URL.Path), zap.Int("rank", h.Rank()), zap.Int("prompt_tokens", in.prompt),
				zap.Int("max_tokens", in.maxTokens), zap.Bool("stream", in.stream))
		}
		out := newOutput(in, s.model)
		if in.stream {
			s.stream(w, r, h, out, plan)
		} else {
			s.respond(w, r, h, out, plan)
		}
	}
}

// input validates req as vLLM would and derives what the engine needs.
func (s *server) input(req *genRequest, chat bool) (genInput, *apiError) {
	if req.Model != "" && req.Model != s.model {
		return genInput{}, &apiError{status: http.StatusNotFound, message: "The model `" + req.Model + "` does not exist."}
	}
	if req.N != nil && *req.N != 1 {
		return genInput{}, badRequest("enginesim generates one choice per request; n must be 1, got %d.", *req.N)
	}
	if req.StreamOptions != nil && !req.Stream {
		return genInput{}, badRequest("Stream options can only be defined when `stream=True`.")
	}
	ids, e := s.promptIDs(req, chat)
	if e != nil {
		return genInput{}, e
	}
	requested := req.MaxTokens
	if chat && req.MaxCompletionTokens != nil {
		requested = req.MaxCompletionTokens
	}
	maxTokens, e := resolveMaxTokens(requested, len(ids), s.engine.Options().MaxModelLen)
	if e != nil {
		return genInput{}, e
	}
	in := genInput{chat: chat, prompt: len(ids), maxTokens: maxTokens, ignoreEOS: req.IgnoreEOS, stream: req.Stream}
	if o := req.StreamOptions; o != nil {
		in.includeUsage = o.IncludeUsage == nil || *o.IncludeUsage
		in.continuousUsage = in.includeUsage && o.ContinuousUsageStats != nil && *o.ContinuousUsageStats
	}
	var reqSeed uint64
	if req.Seed != nil {
		reqSeed = uint64(*req.Seed)
	}
	in.key = Key(s.seed, reqSeed, ids)
	return in, nil
}

func (s *server) promptIDs(req *genRequest, chat bool) ([]int, *apiError) {
	if !chat {
		return parsePrompt(req.Prompt)
	}
	msgs, e := parseMessages(req.Messages)
	if e != nil {
		return nil, e
	}
	return TokenizeChat(msgs), nil
}

// respond waits for the whole output and writes one JSON answer, unless
// the request's fault holds it back or cuts the connection instead.
func (s *server) respond(w http.ResponseWriter, r *http.Request, h *Handle, out *output, plan *faultPlan) {
	var p Progress
	for !p.Done {
		var err error
		if p, err = h.Wait(r.Context()); err != nil {
			if r.Context().Err() == nil {
				writeAPIError(w, submitError(err, s.engine.Options()))
			}
			return
		}
	}
	reset, err := plan.beforeAnswer(r.Context())
	switch {
	case err != nil: // the client left
		return
	case reset:
		plan.cut(w)
		return
	}
	writeJSON(w, http.StatusOK, out.response(p))
}

// output shapes one request's answer: its id, creation time and text.
type output struct {
	genInput
	id      string
	created int64
	model   string
}

func newOutput(in genInput, model string) *output {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	prefix := "cmpl-"
	if in.chat {
		prefix = "chatcmpl-"
	}
	return &output{genInput: in, id: prefix + hex.EncodeToString(b[:]), created: time.Now().Unix(), model: model}
}

// token is the text of output token i: a word, with a leading space except
// at the start of a chat answer.
func (o *output) token(i int) string {
	if o.chat && i == 0 {
		return Word(o.key, i)
	}
	return " " + Word(o.key, i)
}

func (o *output) text(n int) string {
	b := make([]byte, 0, n*8)
	for i := range n {
		b = append(b, o.token(i)...)
	}
	return string(b)
}

func (o *output) usage(completion int) *usage {
	return &usage{PromptTokens: o.prompt, TotalTokens: o.prompt + completion, CompletionTokens: completion}
}
