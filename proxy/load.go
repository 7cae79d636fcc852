package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/load/estimate"
	"github.com/slotgate/slotgate/load/inflight"
)

// RankHeader pins a request to one data-parallel rank of the engine, as
// vLLM's X-data-parallel-rank does; slotgate counts the request's load on
// that rank and forwards the header unchanged.
const RankHeader = "X-Data-Parallel-Rank"

// trackFlight begins the flight of an admitted request and wraps its body
// so that the prompt is estimated as the body passes to the engine. It
// returns the request to forward; the flight ends with the slot (see
// admit's caller).
func (p *Proxy) trackFlight(rec *recorder, r *http.Request) *http.Request {
	if p.flights == nil {
		return r
	}
	rec.flight = p.flights.Begin(rank(r.Header))
	if rec.body != nil {
		// In memory: estimated at once, and the body left as it is, so
		// the transport still sends it with the headers.
		p.setPrompt(rec, rec.body)
		return r
	}
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	out := new(http.Request)
	*out = *r
	out.Body = &promptBody{PromptReader: estimate.NewPromptReader(r.Body, p.maxBody), rec: rec}
	if r.GetBody != nil {
		// A retry on a stale keep-alive connection resends the body: it
		// is estimated again, so the prompt is known whichever send wins.
		out.GetBody = func() (io.ReadCloser, error) {
			b, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			return &promptBody{PromptReader: estimate.NewPromptReader(b, p.maxBody), rec: rec}, nil
		}
	}
	return out
}

// setPrompt estimates an in-memory body's prompt for the flight.
func (p *Proxy) setPrompt(rec *recorder, body []byte) {
	c := estimate.NewPromptCounter(p.maxBody)
	_, _ = c.Write(body) // never fails
	_ = c.Close()
	rec.setPrompt(c.Estimate().PromptTokens)
}

// setPrompt gives the prompt estimate to the flight, and keeps it for the
// context size.
func (r *recorder) setPrompt(tokens int) {
	r.flight.SetPrompt(tokens)
	r.promptTokens.Store(int64(tokens))
}

// rank reads RankHeader; Unpinned when absent or not a rank.
func rank(h http.Header) int {
	v := h.Get(RankHeader)
	if v == "" {
		return inflight.Unpinned
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return inflight.Unpinned
	}
	return n
}

// promptBody passes the request body through unchanged and, when it
// ends, gives its prompt estimate to the flight, once. Read and Close may
// run on different goroutines (net/http's transport does so).
type promptBody struct {
	*estimate.PromptReader
	rec  *recorder
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
		b.rec.setPrompt(est.PromptTokens)
	}
}

// modifyResponse adds the load headers to a proxied response and, for a
// tracked request, counts the tokens of the response as it streams.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	if p.loadHeaders != nil {
		p.loadHeaders(resp.Header)
	}
	rec, ok := resp.Request.Context().Value(recorderKey{}).(*recorder)
	if !ok {
		return nil
	}
	p.event(rec, admission.Responding)
	if rec.flight == nil {
		return nil
	}
	if !countable(resp) {
		rec.flight.Prefilled()
		return nil
	}
	resp.Body = &tokenBody{ReadCloser: resp.Body, counter: estimate.NewStreamCounter(), flight: rec.flight, rec: rec}
	return nil
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
	return ce == "" || strings.EqualFold(ce, "identity")
}

// tokenBody counts the tokens of a response body as the proxy copies it
// to the client: the first one ends the request's prefill, and each one
// adds to its decode blocks. It is read by one goroutine only.
type tokenBody struct {
	io.ReadCloser
	counter   *estimate.StreamCounter
	flight    *inflight.Flight
	rec       *recorder
	generated int
	first     bool
}

func (b *tokenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		_, _ = b.counter.Write(p[:n]) // never fails
		b.update()
	}
	if err != nil {
		_ = b.counter.Close()
		b.update()
		b.flight.Prefilled()
	}
	return n, err
}

// update tells the flight what changed since the last call.
func (b *tokenBody) update() {
	c := b.counter.Counts()
	if c.FirstToken && !b.first {
		b.first = true
		b.flight.Prefilled()
	}
	if c.Generated != b.generated {
		b.generated = c.Generated
		b.flight.SetGenerated(c.Generated)
		if b.rec.adm != nil {
			b.rec.adm.SetContextTokens(int(b.rec.promptTokens.Load()) + c.Generated)
		}
	}
}
