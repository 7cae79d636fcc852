package proxy

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/load/estimate"
)

// exchange is one HTTP request's life through the proxy: the gate's
// Exchange (admission, slot, flight, outcome, events) and what only HTTP
// knows of it: the request as forwarded, its body, and what was written
// back. One is allocated per request; the handler's goroutine owns it,
// except bodyErr and the gate's prompt, written while the engine
// transport sends the body, and the watch's read, published to the
// handler by the watch's done channel.
type exchange struct {
	gate.Exchange
	p *Proxy
	// in is the request as the client sent it, and r as it is forwarded:
	// in, or a copy with its body replaced. Both are nil once the relay
	// has the answer (slim).
	in, r *http.Request
	// line is what the access-log line names of the request.
	line requestLine
	// out is the client's ResponseWriter, counting what goes through.
	out responseWriter
	// bytesIn is the request body's size: declared, or read while it
	// waited (-1 when unknown).
	bytesIn int64
	// body is the request body when it is held in memory (read while the
	// request waited, or a small one read at admission); nil when it
	// streams.
	body []byte
	// bodyPending is set while an HTTP/1.x request body may still be
	// unread on the connection and may not have arrived; an answer of
	// slotgate's own then closes the connection (see answer.write).
	bodyPending bool
	// bodyErr is the first error reading a forwarded request body: the
	// client's fault, not the engine's.
	bodyErr atomic.Pointer[error]
	// bodyEnded is set once a body that streams was read to its end:
	// nothing of it is left on the connection.
	bodyEnded atomic.Bool
	// bodyClock is set when the body has a deadline to arrive by,
	// bodyDeadline (startBodyClock); read-only afterwards.
	bodyClock    bool
	bodyDeadline time.Time
	// watch reads the body of a request that waits (gate.Watch).
	watch bodyWatch
	// ftw is the first-token watchdog of a streamed request; it guards
	// its own fields, which its timer's callback reads.
	ftw firstTokenWatch
	// relayed is set once the answer went to the relay, which ends the
	// exchange (relayed.done), on its loop, after the handler returned.
	relayed bool
	// prompt is the estimate of a body held whole in memory, once made
	// (heldPrompt, which sets promptMade).
	prompt     estimate.Estimate
	promptMade bool
	// park is the request's gate.Parker (park.go), here to cost no
	// allocation to the requests that never wait.
	park parking
	// cut cuts the engine exchange of a request the front end sent
	// (AnswerEarly) short: its client left.
	cut engine.Cut
}

// smallBody is the largest declared request body taken to have arrived with
// its headers; see answer.write.
const smallBody = 64 << 10

func (p *Proxy) newExchange(w http.ResponseWriter, r *http.Request) *exchange {
	ex := &exchange{p: p, in: r, r: r, bytesIn: r.ContentLength,
		bodyPending: r.ProtoMajor == 1 && (r.ContentLength < 0 || r.ContentLength > min(smallBody, p.maxBody))}
	ex.line = requestLine{method: r.Method, path: r.URL.Path, proto: r.Proto, client: r.RemoteAddr}
	ex.ID, ex.Start, ex.Protocol = p.ids.For(r.Header.Get(requestIDHeader)), time.Now(), gate.ProtocolHTTP
	ex.out.ResponseWriter, ex.out.ex = w, ex
	ex.watch.ex = ex
	return ex
}

// requestLine is what an access-log line names of its request: strings
// the request already holds, so that keeping them copies nothing.
type requestLine struct{ method, path, proto, client string }

// clientGone reports whether the client left: its context ended or a write
// to it failed. Once the relay has the answer (ex.in nil), the relay
// tells.
func (ex *exchange) clientGone() bool {
	return ex.in != nil && ex.in.Context().Err() != nil || ex.out.writeErr != nil
}

// responseWriter is the client's ResponseWriter as the proxy writes to
// it: it learns the status, the bytes written, the time of the first
// byte (the exchange's FirstByte) and the first write error.
type responseWriter struct {
	http.ResponseWriter
	ex       *exchange
	status   int
	bytes    int64
	writeErr error
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.ex.FirstByte.IsZero() {
		w.ex.FirstByte = time.Now()
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	if err != nil && w.writeErr == nil {
		w.writeErr = err
	}
	return n, err
}

// FlushError lets http.ResponseController (used by httputil.ReverseProxy)
// flush through the wrapper; streaming depends on it.
func (w *responseWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err != nil && w.writeErr == nil {
		w.writeErr = err
	}
	return err
}

// Unwrap exposes the underlying writer to http.ResponseController, for read
// deadlines and full duplex.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
