package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxProbes bounds the probes of one run: a probe that arrives just as a
// place frees up is admitted, and the next full queue gets another.
const maxProbes = 5

// refusalProbe sends one request of its own while slotgate's queue is
// full, to show what a refused client gets and how fast: the load
// generator's report counts refusals but does not time them.
type refusalProbe struct {
	url string
	// sent counts the probes sent; every one may be among slotgate's
	// refusals.
	sent int
	// refused is set once a probe got the overload answer; status,
	// retryAfter and latency describe that answer.
	refused    bool
	status     int
	retryAfter string
	latency    time.Duration
}

// try sends a probe unless one was refused already or maxProbes were
// sent. The latency is to the answer's head; a probe admitted instead is
// read to its end, which max_tokens 1 keeps short.
func (p *refusalProbe) try(ctx context.Context) {
	if p.refused || p.sent >= maxProbes {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body := `{"model":"sim-model","prompt":"probe","max_tokens":1}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	p.sent++
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	latency := time.Since(start)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		p.refused, p.status, p.retryAfter, p.latency = true, resp.StatusCode, resp.Header.Get("Retry-After"), latency
	}
}
