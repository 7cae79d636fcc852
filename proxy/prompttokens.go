package proxy

import "github.com/slotgate/slotgate/load/estimate"

// unknownPromptTokens is what a request whose body slotgate could not
// hold counts against the token limits: more than any limit, so that it
// is admitted only when no other prompt is in prefill, as an oversized
// prompt is (the limiter counts at most 2^40).
const unknownPromptTokens = 1 << 40

// promptTokens is the gate's count of the request's prompt tokens
// (gate.Request.Tokens), asked only while a token limit is in force,
// after the body watch has read the body before admission: token ids
// exactly, text at about 4 bytes a token (package estimate). The estimate
// is kept for the flight's prompt (countPrompt), so that the body is
// counted once.
//
// A body held whole that is no prompt slotgate can read (no "prompt" or
// "messages", or no body at all) counts 0, as it asks no prefill that
// slotgate can see. A body the budget for bodies held in memory could
// not hold is counted by its declared length, at 2 bytes a token (the
// densest a JSON token-id array gets, "1,"), or, of unknown length, as
// larger than any limit.
func (ex *exchange) promptTokens() int64 {
	w := &ex.watch
	if !w.whole {
		if n := ex.in.ContentLength; n >= 0 {
			return (n + 1) / 2
		}
		return unknownPromptTokens
	}
	if len(w.buf) == 0 {
		return 0
	}
	c := estimate.NewPromptCounter(ex.p.maxBody)
	_, _ = c.Write(w.buf) // never fails
	_ = c.Close()
	e := c.Estimate()
	ex.prompt = &e
	if !e.Known {
		return 0
	}
	return int64(e.PromptTokens)
}
