package eventplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// Defaults of Options.
const (
	// DefaultHeartbeat is how often every rank is republished when nothing
	// changed: Dynamo's own worker heartbeat (#14483).
	DefaultHeartbeat = 10 * time.Second
	// DefaultDebounce is the window that gathers a rank's changes.
	DefaultDebounce = 20 * time.Millisecond
	// DefaultTimeout bounds a connection's handshake and each flush.
	DefaultTimeout = 2 * time.Second
	// Reconnection backoff: from minBackoff, doubling, at most maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// logEvery rate-limits the logs of failed connections.
	logEvery = 30 * time.Second
)

// Options configure a Publisher.
type Options struct {
	// URL is the NATS server, nats://[user:pass@]host:port. Required.
	URL string
	// Endpoint is the Dynamo endpoint whose load this is. Required.
	Endpoint Endpoint
	// WorkerID is the worker's Dynamo instance id: ActiveLoad's worker_id
	// and the envelope's publisher_id.
	WorkerID uint64
	// Heartbeat, Debounce and Timeout override the defaults when set.
	Heartbeat, Debounce, Timeout time.Duration
	// Logger logs connections, losses and server errors; nil logs nothing.
	Logger *slog.Logger
	// Dial opens the TCP connection; nil uses net.Dialer. Tests set it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Publisher publishes the load of a report.Hub on Dynamo's event plane.
// New starts nothing; Run does the work.
type Publisher struct {
	opts    Options
	url     *url.URL
	subject string
	log     *slog.Logger

	mu    sync.Mutex // guards track
	track *tracker
	wake  chan struct{} // a snapshot was observed

	seq uint64 // the next envelope's sequence; Run's goroutine only
	buf []byte // Run's goroutine only
}

// New checks opts and returns a Publisher; it fails on a bad URL or a
// missing endpoint.
func New(opts Options) (*Publisher, error) {
	u, err := ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("eventplane: %w", err)
	}
	if opts.Endpoint.Namespace == "" || opts.Endpoint.Component == "" || opts.Endpoint.Name == "" {
		return nil, errors.New("eventplane: Options.Endpoint needs a namespace, a component and a name")
	}
	if opts.Heartbeat < 0 || opts.Debounce < 0 || opts.Timeout < 0 {
		return nil, errors.New("eventplane: Heartbeat, Debounce and Timeout must not be negative")
	}
	opts.Heartbeat = cmp.Or(opts.Heartbeat, DefaultHeartbeat)
	opts.Debounce = cmp.Or(opts.Debounce, DefaultDebounce)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{
		opts: opts, url: u, subject: opts.Endpoint.Subject(), log: log.With(slog.String("nats", u.Host)),
		track: newTracker(opts.Debounce), wake: make(chan struct{}, 1),
	}, nil
}

// Subject is the NATS subject the Publisher publishes on.
func (p *Publisher) Subject() string { return p.subject }

// Run watches hub and publishes until ctx ends; it then returns nil at
// once, a write in progress being cut. It may be called once.
func (p *Publisher) Run(ctx context.Context, hub *report.Hub) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// The watch callback only records: the hub's watchers never wait for
	// the network.
	wg.Go(func() { _ = hub.Watch(ctx, func(s *report.Snapshot) error { p.observe(s); return nil }) })
	p.loop(ctx)
	return nil
}

// observe records a snapshot and wakes the loop; it never blocks for long.
func (p *Publisher) observe(s *report.Snapshot) {
	p.mu.Lock()
	p.track.observe(s, time.Now())
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// loop connects, publishes what is due, and reconnects after a loss,
// until ctx ends.
func (p *Publisher) loop(ctx context.Context) {
	heartbeat := time.NewTicker(p.opts.Heartbeat)
	defer heartbeat.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c := p.connect(ctx)
		if c == nil {
			return
		}
		p.mu.Lock()
		p.track.refresh(time.Now(), true) // the latest of every rank first
		p.mu.Unlock()
		err := p.serve(ctx, c, heartbeat.C, timer)
		c.close()
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("nats connection lost", slog.Any("error", cmpErr(err, c.err)))
	}
}

// serve publishes on c until ctx ends (nil) or the connection fails.
func (p *Publisher) serve(ctx context.Context, c *conn, heartbeat <-chan time.Time, timer *time.Timer) error {
	for {
		if err := p.sendDue(c); err != nil {
			return err
		}
		p.mu.Lock()
		next, ok := p.track.nextDeadline()
		p.mu.Unlock()
		timer.Stop()
		if ok {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.done:
			return c.err
		case <-p.wake:
		case <-timer.C:
		case <-heartbeat:
			p.mu.Lock()
			p.track.refresh(time.Now(), false)
			p.mu.Unlock()
		}
	}
}

// sendDue publishes every load due and flushes them.
func (p *Publisher) sendDue(c *conn) error {
	p.mu.Lock()
	loads := p.track.due(time.Now(), p.opts.WorkerID)
	p.mu.Unlock()
	if len(loads) == 0 {
		return nil
	}
	for _, l := range loads {
		payload := l.Append(nil)
		env := Envelope{
			PublisherID: p.opts.WorkerID, Sequence: p.seq, PublishedAt: uint64(time.Now().UnixMilli()),
			Topic: Topic, Payload: payload,
		}
		p.buf = env.Append(p.buf[:0])
		p.seq++
		if err := c.publish(p.subject, p.buf); err != nil {
			return err
		}
	}
	return c.flush()
}

// connect dials until it succeeds or ctx ends (nil), waiting between
// attempts with exponential backoff and jitter.
func (p *Publisher) connect(ctx context.Context) *conn {
	var lastLog time.Time
	backoff := minBackoff
	for attempt := 1; ; attempt++ {
		c, err := dial(ctx, p.opts.Dial, p.url, p.opts.Timeout, p.log)
		if err == nil {
			p.log.Info("nats connected", slog.String("subject", p.subject), slog.Int("attempts", attempt))
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		if now := time.Now(); attempt == 1 || now.Sub(lastLog) >= logEvery {
			p.log.Warn("nats connect failed, retrying", slog.Any("error", err), slog.Int("attempts", attempt))
			lastLog = now
		}
		wait := backoff/2 + rand.N(backoff/2+1) // jitter: spread reconnecting workers
		backoff = min(2*backoff, maxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
