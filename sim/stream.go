package sim

import "net/http"

// stream writes the answer as Server-Sent Events: headers at once, then
// after the first step the chat role event, one event per output token,
// the last with its finish_reason, the usage event if asked for, and
// "data: [DONE]". Each batch of tokens is flushed as it comes. If the
// engine stops mid-stream, an error event precedes [DONE]. If the client
// leaves, it just returns. The request's fault acts at three points: before
// the first token (a slow first token), after each batch once half the
// expected output is out (a stall, or a reset that cuts the connection),
// and instead of the end (a never-ending answer: keep-alive comments, no
// finish reason, usage or [DONE]).
func (s *server) stream(w http.ResponseWriter, r *http.Request, h *Handle, out *output, plan *faultPlan) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	ev := &sse{w: w, rc: http.NewResponseController(w)}
	ev.flush()
	sent := 0
	for ev.err == nil {
		p, err := h.Wait(ctx)
		if err != nil {
			if ctx.Err() == nil {
				e := submitError(err, s.engine.Options())
				ev.event(newErrorBody(e.status, e.message))
				ev.done()
			}
			return
		}
		if sent == 0 && plan.first(ctx) != nil {
			return
		}
		s.writeTokens(ev, out, p, sent, plan.neverEnds())
		sent = p.Tokens
		ev.flush()
		if ev.err != nil {
			return
		}
		reset, err := plan.streamed(ctx, sent)
		if err != nil {
			return
		}
		if reset {
			plan.cut(w)
			return
		}
		if p.Done {
			break
		}
	}
	if plan.end(ctx, keepAliveInterval, ev.keepAlive) != nil {
		return
	}
	if out.includeUsage {
		ev.event(out.usageChunk(sent))
	}
	ev.done()
}

// writeTokens writes the events of output tokens sent through p.Tokens-1,
// after the chat role event when none was sent yet. The last token of a
// done request carries its finish reason, unless the answer never ends.
func (s *server) writeTokens(ev *sse, out *output, p Progress, sent int, neverEnds bool) {
	if out.chat && sent == 0 {
		ev.event(out.roleChunk())
	}
	for ; sent < p.Tokens; sent++ {
		finish := ""
		if p.Done && sent == p.Tokens-1 && !neverEnds {
			finish = p.FinishReason
		}
		ev.event(out.tokenChunk(sent, finish))
	}
}

// sse writes events until the first write error (the client left).
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (e *sse) event(v any) {
	if e.err != nil {
		return
	}
	b, err := marshal(v)
	if err != nil {
		e.err = err
		return
	}
	e.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// done writes the terminator and flushes.
func (e *sse) done() {
	e.write([]byte("data: [DONE]\n\n"))
	e.flush()
}

// keepAlive writes and flushes an SSE comment, which clients ignore, and
// returns the first write error.
func (e *sse) keepAlive() error {
	e.write([]byte(": keep-alive\n\n"))
	e.flush()
	return e.err
}

func (e *sse) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *sse) flush() {
	if e.err == nil {
		e.err = e.rc.Flush()
	}
}
