package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/gate"
)

// FirstToken configures the first-token watchdog: a streamed request
// whose engine produces no real token (no SSE comment, keep-alive or
// role-only chunk counts) within its budget, from the moment it is
// forwarded, is aborted at the engine and answered as overloaded.
//
// Only streamed requests are watched: those whose body says
// "stream": true, or whose answer is text/event-stream. A non-streamed
// answer arrives whole at its end, so a first-token budget would cut
// every long one; it is never cut. When the budget runs out before
// either is known (the body still on its way, the answer's head not
// come), the request is cut when its head arrives as a stream. An
// answer that is an error, a redirect or compressed is not watched: no
// token can be seen in it.
type FirstToken struct {
	// Timeout is the budget of a request with an empty prompt; 0 turns
	// the watchdog off.
	Timeout time.Duration
	// Per1KTokens adds to the budget for every 1000 tokens of the prompt
	// estimate, so that a long prompt's prefill is not cut by a budget
	// meant for chat.
	Per1KTokens time.Duration
}

// TTFTHeader lets a request ask for a smaller first-token budget, in
// whole milliseconds; never a larger one. A value that is not a positive
// whole number is ignored.
const TTFTHeader = "X-Slo-Ttft-Ms"

// errFirstTokenTimeout ends the engine request of an exchange whose
// watchdog fired before any of the answer reached the client.
var errFirstTokenTimeout = errors.New("no first token within the first-token budget")

func (f FirstToken) on() bool { return f.Timeout > 0 }

// budget is the time a request with a prompt of promptTokens may wait for
// its first token: Timeout and Per1KTokens for each 1000 tokens, at most
// asked when the request asked for less (asked 0: it did not).
func (f FirstToken) budget(promptTokens int, asked time.Duration) time.Duration {
	b := f.Timeout
	if promptTokens > 0 && f.Per1KTokens > 0 {
		extra := float64(f.Per1KTokens) * float64(promptTokens) / 1000
		if extra >= float64(math.MaxInt64-b) {
			b = math.MaxInt64 // a float64 of MaxInt64-b may round up past it
		} else {
			b += time.Duration(extra)
		}
	}
	if asked > 0 && asked < b {
		return asked
	}
	return b
}

// parseTTFT reads a TTFTHeader value: the budget asked for, and whether
// the value is one (a whole number of milliseconds, at least 1).
func parseTTFT(v string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms <= 0 || ms > int64(math.MaxInt64/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// firstTokenGuard is the proxy's watchdog: its budget and its answers,
// rendered once.
type firstTokenGuard struct {
	cfg FirstToken
	// answer is the overload answer of a request cut before any byte of
	// its answer reached the client; event ends a stream already started.
	answer answer
	event  []byte
}

const firstTokenMessage = "Server overloaded: the engine produced no first token in time"

func newFirstTokenGuard(cfg FirstToken, a *answers) firstTokenGuard {
	g := firstTokenGuard{cfg: cfg, answer: a.rendered(a.overloadStatus, "Overloaded", firstTokenMessage, "first_token_timeout", true)}
	// The same OpenAI error object, as one SSE event.
	g.event = append(append([]byte("data: "), bytes.TrimSpace(g.answer.body)...), '\n', '\n')
	return g
}

// watchFirstToken arms the watchdog of an admitted request about to be
// forwarded: its engine request gets a context of its own, which the
// watchdog cancels, so that the engine connection closes and the engine
// sees the abort. A request whose body says it does not stream is armed
// too, in case its answer streams all the same.
func (p *Proxy) watchFirstToken(ex *exchange) {
	if !p.firstToken.cfg.on() {
		return
	}
	asked, _ := parseTTFT(ex.in.Header.Get(TTFTHeader))
	ctx, cancel := context.WithCancel(ex.r.Context())
	ex.r = ex.r.WithContext(ctx)
	ex.ftw.arm(p.firstToken.cfg, asked, cancel)
}

type watchState uint8

const (
	watchOff     watchState = iota // never armed
	watchArmed                     // waiting for the first token
	watchOverdue                   // the budget ran out before the request was known to stream
	watchStopped                   // the first token came, or the request is not watched
	watchFired                     // the budget ran out: the engine request is cancelled
)

type streamFlag uint8

const (
	streamUnknown streamFlag = iota // the body has not been read to its end
	streamYes
	streamNo
)

// firstTokenWatch is one request's watchdog. The timer's callback (a
// goroutine of its own), the goroutine sending the body (known) and the
// handler's goroutine all use it, so every field is guarded by mu. It
// costs a time.AfterFunc, no goroutine, until the timer fires.
type firstTokenWatch struct {
	mu     sync.Mutex
	state  watchState
	timer  *time.Timer
	cancel context.CancelFunc // the engine request's context
	cfg    FirstToken
	sent   time.Time     // when the request was forwarded
	asked  time.Duration // TTFTHeader's budget; 0 none
	prompt int           // the prompt estimate, once known
	stream streamFlag    // what the request body says
	// answerStream: the engine's answer is text/event-stream.
	answerStream bool
}

// known records the request body's prompt estimate and stream flag; it
// may run on the goroutine that sends the body.
func (w *firstTokenWatch) known(promptTokens int, stream bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prompt, w.stream = promptTokens, streamNo
	if stream {
		w.stream = streamYes
	}
	if w.state == watchOverdue {
		w.recheckLocked()
	}
}

// recheckLocked settles an overdue watch that has learnt more (the
// prompt's size and whether it streams, or its answer's head): with time
// left on its budget, now that the prompt is known, it is armed again for
// the rest; with none, it fires when the request is known to stream.
// Otherwise it stays overdue, for the answer's head to decide.
func (w *firstTokenWatch) recheckLocked() {
	left := time.Until(w.sent.Add(w.cfg.budget(w.prompt, w.asked)))
	switch {
	case left > 0:
		w.state = watchArmed
		w.timer.Reset(left)
	case w.stream == streamYes || w.answerStream:
		w.fireLocked()
	}
}

func (w *firstTokenWatch) arm(cfg FirstToken, asked time.Duration, cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state, w.cfg, w.asked, w.cancel, w.sent = watchArmed, cfg, asked, cancel, time.Now()
	// The callback takes mu, so it cannot run before timer is set.
	w.timer = time.AfterFunc(cfg.budget(w.prompt, asked), w.fire)
}

// fire is the timer's callback. The budget is computed again, now that
// the prompt of a streamed body may be known: a larger one sets the timer
// again for the rest.
func (w *firstTokenWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != watchArmed {
		return
	}
	if left := time.Until(w.sent.Add(w.cfg.budget(w.prompt, w.asked))); left > 0 {
		w.timer.Reset(left)
		return
	}
	if w.stream != streamYes && !w.answerStream {
		w.state = watchOverdue // not known to stream: answered decides
		return
	}
	w.fireLocked()
}

func (w *firstTokenWatch) fireLocked() {
	w.state = watchFired
	w.cancel()
}

// answered tells the watch the engine's answer head arrived. It reports
// whether the answer is still watched, and errFirstTokenTimeout when the
// watch fired already.
func (w *firstTokenWatch) answered(resp *http.Response) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case watchFired:
		return false, errFirstTokenTimeout
	case watchArmed, watchOverdue:
	default:
		return false, nil
	}
	ct := resp.Header.Get("Content-Type")
	w.answerStream = strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream")
	switch {
	case !countable(resp) || (w.stream != streamYes && !w.answerStream):
		w.stopLocked()
		return false, nil
	case w.state == watchOverdue:
		// A stream: its budget, with the prompt now known, decides.
		if w.recheckLocked(); w.state == watchFired {
			return false, errFirstTokenTimeout
		}
	}
	return true, nil
}

// tokenArrived stops the watch at the first real token.
func (w *firstTokenWatch) tokenArrived() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == watchArmed {
		w.stopLocked()
	}
}

func (w *firstTokenWatch) stopLocked() {
	w.state = watchStopped
	w.timer.Stop()
}

// fired reports whether the watchdog aborted the request.
func (w *firstTokenWatch) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == watchFired
}

// end stops the watch when the request ends, and releases its context.
func (w *firstTokenWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == watchArmed || w.state == watchOverdue {
		w.stopLocked()
	}
	if w.cancel != nil {
		w.cancel()
	}
}

// awaitFirstBytes holds a watched answer's head back until its body's
// first bytes arrive: while nothing has reached the client, a watchdog
// that fires can still answer with the overload status. (ReverseProxy
// flushes a stream's head at once, and engines send it before any
// token.) A read that fails with nothing read fails the answer, which
// ErrorHandler then maps.
func (ex *exchange) awaitFirstBytes(resp *http.Response) error {
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		if n == 0 && err == nil {
			continue
		}
		if n == 0 && err != io.EOF {
			return err
		}
		resp.Body = &primedBody{ReadCloser: resp.Body, head: buf[:n], err: err}
		if ex.ftw.fired() {
			return errFirstTokenTimeout // nothing has reached the client yet
		}
		return nil
	}
}

// primedBody is a body whose first bytes (and the error read with them)
// were read ahead.
type primedBody struct {
	io.ReadCloser
	head []byte
	err  error
}

func (b *primedBody) Read(p []byte) (int, error) {
	if len(b.head) == 0 && b.err != nil {
		return 0, b.err
	}
	if len(b.head) == 0 {
		return b.ReadCloser.Read(p)
	}
	n := copy(p, b.head)
	b.head = b.head[n:]
	return n, nil
}

// cutBody is the body of a watched stream: when the watchdog aborts it
// after its head reached the client, the read that fails is replaced by
// the OpenAI-style error event and a clean end (ReverseProxy would
// otherwise abort the client's connection with nothing said).
type cutBody struct {
	io.ReadCloser
	ex    *exchange
	event []byte // what is left of the error event to send
	cut   bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.cut {
		n := copy(p, b.event)
		b.event = b.event[n:]
		if len(b.event) == 0 {
			return n, io.EOF
		}
		return n, nil
	}
	n, err := b.ReadCloser.Read(p)
	if err == nil || err == io.EOF || !b.ex.ftw.fired() || b.ex.clientGone() {
		return n, err
	}
	b.cut, b.event = true, b.ex.p.firstToken.event
	b.ex.Fail(gate.FirstTokenTimeout)
	b.ex.p.logFirstTokenTimeout(b.ex)
	if n == 0 {
		return b.Read(p)
	}
	return n, nil
}

func (p *Proxy) logFirstTokenTimeout(ex *exchange) {
	p.log.Warn("no first token in time: engine request aborted", zap.String("request_id", ex.ID))
}
