package sim

import "net/http"

// stream writes the answer as Server-Sent Events: headers at once, then
// after the first step the chat role event, one event per output token,
// the last with its finish_reason, the usage event if asked for, and
// "data: [DONE]". Each batch of tokens is flushed as it comes. If the
// engine stops mid-stream, an error event precedes [DONE]. If the client
// leaves, it just returns.
func (s *server) stream(w http.ResponseWriter, r *http.Request, h *Handle, out *output) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ev := &sse{w: w, rc: http.NewResponseController(w)}
	ev.flush()
	sent := 0
	for ev.err == nil {
		p, err := h.Wait(r.Context())
		if err != nil {
			if r.Context().Err() == nil {
				e := submitError(err, s.engine.Options())
				ev.event(newErrorBody(e.status, e.message))
				ev.done()
			}
			return
		}
		if out.chat && sent == 0 {
			ev.event(out.roleChunk())
		}
		for ; sent < p.Tokens; sent++ {
			finish := ""
			if p.Done && sent == p.Tokens-1 {
				finish = p.FinishReason
			}
			ev.event(out.tokenChunk(sent, finish))
		}
		if p.Done {
			break
		}
		ev.flush()
	}
	if out.includeUsage {
		ev.event(out.usageChunk(sent))
	}
	ev.done()
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
