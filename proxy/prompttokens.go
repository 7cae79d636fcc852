package proxy

import "github.com/slotgate/slotgate/load/estimate"

// promptTokens is the gate's count of the request's prompt tokens
// (gate.Request.Tokens), asked only while a token limit is in force,
// after the body watch has read the body before admission: token ids
// exactly, text at about 4 bytes a token (package estimate), made once
// (heldPrompt): the flight's prompt reuses it.
//
// A body held whole that is no prompt slotgate can read (no "prompt" or
// "messages", or no body at all) counts 0, as it asks no prefill that
// slotgate can see. A body the budget for bodies held in memory could
// not hold is counted by its declared length, at 2 bytes a token (the
// densest a JSON token-id array gets, "1,"), or, of unknown length, not
// at all (-1): the gate counts it as its largest token limit.
func (ex *exchange) promptTokens() int64 {
	w := &ex.watch
	if !w.whole {
		if n := ex.in.ContentLength; n >= 0 {
			return (n + 1) / 2
		}
		return -1
	}
	if len(w.buf) == 0 {
		return 0
	}
	e := ex.heldPrompt(w.buf)
	if !e.Known {
		return 0
	}
	return int64(e.PromptTokens)
}

// heldPrompt is the estimate of the request's body held whole in memory,
// buf, made once per request: before admission while a token limit is in
// force (promptTokens), else as its flight begins (countPrompt).
func (ex *exchange) heldPrompt(buf []byte) estimate.Estimate {
	if !ex.promptMade {
		c := ex.p.counters.prompt(ex.p.maxBody)
		_, _ = c.Write(buf) // never fails
		_ = c.Close()
		ex.prompt, ex.promptMade = c.Estimate(), true
		ex.p.counters.prompts.Put(c)
	}
	return ex.prompt
}
