package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/load/estimate"
)

// RankHeader pins a request to one data-parallel rank of the engine, as
// vLLM's X-data-parallel-rank does; slotgate counts the request's load on
// that rank and forwards the header unchanged. With limits per rank, a
// request that names no rank is given the rank slotgate chose in it.
const RankHeader = "X-Data-Parallel-Rank"

// rankOf reads RankHeader: the rank, and whether one is named. A value
// that is not a rank (not a whole number of at least 0) names none.
func rankOf(h http.Header) (int, bool) {
	v := h.Get(RankHeader)
	if v == "" {
		return gate.Unpinned, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return gate.Unpinned, false
	}
	return n, true
}

// countPrompt estimates the prompt of a request whose tokens are counted:
// at once when its body is in memory (left as it is, so the engine client
// still sends it with the headers), or as the body passes to the engine.
func (p *Proxy) countPrompt(ex *exchange) {
	if !ex.Counting() && !p.firstToken.cfg.on() {
		return
	}
	if ex.body != nil {
		ex.promptEstimated(ex.heldPrompt(ex.body))
		return
	}
	r := ex.r
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	out := new(http.Request)
	*out = *r
	out.Body = &promptBody{PromptReader: estimate.NewPromptReader(r.Body, p.maxBody), ex: ex}
	if r.GetBody != nil {
		// A retry on a stale keep-alive connection resends the body: it
		// is estimated again, so the prompt is known whichever send wins.
		out.GetBody = func() (io.ReadCloser, error) {
			b, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			return &promptBody{PromptReader: estimate.NewPromptReader(b, p.maxBody), ex: ex}, nil
		}
	}
	ex.r = out
}

// promptEstimated gives the request body's estimate to the gate and the
// first-token watchdog. It may run on the goroutine sending the body.
func (ex *exchange) promptEstimated(est estimate.Estimate) {
	ex.SetPrompt(est.PromptTokens)
	if ex.p.firstToken.cfg.on() {
		ex.ftw.known(est.PromptTokens, est.Stream)
	}
}

// promptBody passes the request body through unchanged and, when it
// ends, gives its prompt estimate to the exchange, once. Read and Close
// may run on different goroutines (net/http's transport does so).
type promptBody struct {
	*estimate.PromptReader
	ex   *exchange
	done atomic.Bool
}

func (b *promptBody) Read(p []byte) (int, error) {
	n, err := b.PromptReader.Read(p)
	if err != nil {
		b.report()
	}
	return n, err
}

func (b *promptBody) Close() error {
	err := b.PromptReader.Close()
	b.report()
	return err
}

func (b *promptBody) report() {
	est, ended := b.Estimate()
	if ended && b.done.CompareAndSwap(false, true) {
		b.ex.promptEstimated(est)
	}
}

// countable reports whether the tokens of resp can be counted as it
// passes. An error or a redirect brings none: the engine computes nothing
// more for the request. A protocol switch (101) must keep its writable
// body, which ReverseProxy needs. A compressed body cannot be read without
// decompressing it, which the proxy does not do; its prefill is taken to
// end with the headers, the best the proxy can tell.
func countable(resp *http.Response) bool {
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return false
	}
	ce := resp.Header.Get("Content-Encoding")
	return ce == "" || asciiEqualFold(ce, "identity")
}

// tokenBody counts the tokens of a response body as the proxy copies it
// to the client. It is read by one goroutine only.
type tokenBody struct {
	io.ReadCloser
	tokenCount
}

func newTokenBody(body io.ReadCloser, ex *exchange) *tokenBody {
	return &tokenBody{ReadCloser: body, tokenCount: newTokenCount(ex)}
}

func (b *tokenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.add(p[:n])
	}
	if err != nil {
		b.end(err == io.EOF)
	}
	return n, err
}

// tokenCount counts the tokens of an answer's body as it passes: the
// first one ends the request's prefill, and each one adds to its
// generated tokens. One goroutine at a time uses it.
type tokenCount struct {
	counter   *estimate.StreamCounter
	ex        *exchange        // its clientGone says whether the client left
	watch     *firstTokenWatch // the first-token watchdog; nil: not watched
	generated int
	first     bool
}

func newTokenCount(ex *exchange) tokenCount {
	return tokenCount{counter: ex.p.counters.stream(), ex: ex}
}

// counters keeps the token counters of requests that ended, for the next
// ones: each is a few hundred bytes, and the fast path's garbage is most
// of its collector's work.
type counters struct {
	prompts sync.Pool // of *estimate.PromptCounter
	streams sync.Pool // of *estimate.StreamCounter
}

// prompt returns a prompt counter of the first limit bytes.
func (c *counters) prompt(limit int64) *estimate.PromptCounter {
	if v, ok := c.prompts.Get().(*estimate.PromptCounter); ok {
		v.Reset(limit)
		return v
	}
	return estimate.NewPromptCounter(limit)
}

// stream returns a counter for one answer; whoever is sure nothing uses
// it any more (answerServed) gives it back to c.streams.
func (c *counters) stream() *estimate.StreamCounter {
	if v, ok := c.streams.Get().(*estimate.StreamCounter); ok {
		v.Reset()
		return v
	}
	return estimate.NewStreamCounter()
}

// add counts the body's next bytes.
func (b *tokenCount) add(p []byte) {
	_, _ = b.counter.Write(p) // never fails
	b.update()
}

// end counts the body's end: whole (the engine ended it) or cut.
func (b *tokenCount) end(whole bool) {
	if whole {
		b.ex.EngineDone()
	}
	_ = b.counter.Close()
	b.update()
	if !b.ex.clientGone() && (b.watch == nil || !b.watch.fired()) {
		// The answer ended: its prefill has too. A read cut short by
		// a departed client, or by the first-token watchdog, is not
		// an end the engine has seen yet: Finish frees the waiting
		// place with the slot, after the abort grace.
		b.ex.Prefilled()
	}
}

// update tells the exchange what changed since the last call.
func (b *tokenCount) update() {
	c := b.counter.Counts()
	if c.FirstToken && !b.first {
		b.first = true
		if b.watch != nil {
			b.watch.tokenArrived()
		}
		b.ex.Prefilled()
	}
	if c.Generated != b.generated {
		b.generated = c.Generated
		b.ex.SetGenerated(c.Generated)
	}
}
