package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Options configure a Prober.
type Options struct {
	// URL is polled with GET; a 200 answer means ready. Required.
	URL string
	// Interval between polls while the engine is ready; 0 means one
	// second.
	Interval time.Duration
	// RetryInterval between polls while it is not ready (before its first
	// 200, and after a failed poll), so that readiness comes back soon
	// after the engine does; 0 means a fifth of Interval (200 ms for the
	// default). It is never more than Interval.
	RetryInterval time.Duration
	// Timeout of one poll; 0 means the interval.
	Timeout time.Duration
	// Client makes the polls (slotgate passes engine.Client.HTTPClient);
	// nil means a client of its own. The prober polls through a copy that
	// never follows a redirect, whatever Client's CheckRedirect.
	Client *http.Client
	// Logger gets state changes; nil logs nothing.
	Logger *zap.Logger
}

// Prober polls an engine's health endpoint.
type Prober struct {
	url      string
	interval time.Duration
	retry    time.Duration
	timeout  time.Duration
	client   *http.Client
	log      *zap.Logger
	last     atomic.Pointer[result]
	// ownClient is set when the prober made its client, so Run may close
	// the client's idle connection when it returns.
	ownClient bool
}

type result struct {
	at  time.Time
	err error // nil: answered 200
}

// New checks opts and returns a Prober; it starts nothing.
func New(opts Options) (*Prober, error) {
	if opts.URL == "" {
		return nil, errors.New("health: a URL is required")
	}
	p := &Prober{url: opts.URL, interval: opts.Interval, retry: opts.RetryInterval, timeout: opts.Timeout, log: opts.Logger}
	if p.interval <= 0 {
		p.interval = time.Second
	}
	if p.retry <= 0 {
		p.retry = p.interval / 5
	}
	p.retry = min(p.retry, p.interval)
	if p.timeout <= 0 {
		p.timeout = p.interval
	}
	p.client, p.ownClient = pollClient(opts.Client)
	if p.log == nil {
		p.log = zap.NewNop()
	}
	return p, nil
}

// pollClient returns the client that polls: a copy of given that follows
// no redirect, or, when given is nil, a client of the prober's own.
func pollClient(given *http.Client) (c *http.Client, own bool) {
	if given == nil {
		return &http.Client{
			Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1},
			CheckRedirect: noRedirect,
		}, true
	}
	copied := *given // the caller's client stays as it was
	copied.CheckRedirect = noRedirect
	return &copied, false
}

// noRedirect returns a redirect as the answer: a redirect is not a health
// answer, only a 200 from the path itself means ready.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Run polls until ctx ends, the first time at once, then every Interval
// while the engine is ready and every RetryInterval while it is not; each
// wait counts from the start of the poll before. It always returns nil
// once ctx ends: a failing engine is a state, not an error.
func (p *Prober) Run(ctx context.Context) error {
	t := time.NewTimer(p.interval) // reset after each poll
	defer t.Stop()
	if p.ownClient {
		// Leave no keep-alive connection (and its goroutines) behind: the
		// transport has no idle timeout.
		defer p.client.CloseIdleConnections()
	}
	for {
		start := time.Now()
		err := p.poll(ctx)
		if ctx.Err() != nil {
			return nil // a poll cut short by shutdown says nothing about the engine
		}
		p.record(err)
		next := p.interval
		if err != nil {
			// Poll faster while unready: a restarted engine is back in
			// /readyz (and so in the endpoints) within RetryInterval, not a
			// whole Interval later.
			next = p.retry
		}
		t.Reset(max(0, next-time.Since(start)))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (p *Prober) poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("poll %s: %w", p.url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("poll %s: status %d", p.url, resp.StatusCode)
	}
	return nil
}

func (p *Prober) record(err error) {
	prev := p.last.Swap(&result{at: time.Now(), err: err})
	wasReady := prev != nil && prev.err == nil
	switch {
	case err == nil && !wasReady:
		p.log.Info("engine is ready", zap.String("url", p.url))
	case err != nil && (wasReady || prev == nil):
		p.log.Warn("engine is not ready", zap.String("url", p.url), zap.Error(err))
	}
}

// Ready returns nil when the engine answered 200 recently, and otherwise
// the reason it is not ready.
func (p *Prober) Ready() error {
	r := p.last.Load()
	switch {
	case r == nil:
		return errors.New("engine not polled yet")
	case r.err != nil:
		return r.err
	case time.Since(r.at) > 3*p.interval:
		return fmt.Errorf("engine last answered %s ago", time.Since(r.at).Round(time.Millisecond))
	}
	return nil
}
