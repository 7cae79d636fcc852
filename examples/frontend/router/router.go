package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/load/watch"
)

// Policy is how a Router picks a worker.
type Policy string

// The policies.
const (
	// PolicyLoad excludes busy and marked workers and picks the least
	// loaded of the rest.
	PolicyLoad Policy = "load"
	// PolicyRoundRobin rotates through every worker, blind to load and
	// marks: the baseline a plain Kubernetes Service gives.
	PolicyRoundRobin Policy = "roundrobin"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultCooldown       = time.Second
	DefaultMaxReplayBytes = 1 << 20
)

// Options configure a Router.
type Options struct {
	// Workers are the fleet, in order; names must be unique. None is
	// allowed: every request is then answered 503.
	Workers []Worker
	// Policy is PolicyLoad (the default) or PolicyRoundRobin.
	Policy Policy
	// Cooldown is how long a worker's 529 keeps it marked overloaded;
	// 0 means DefaultCooldown (Dynamo's 1 s lease).
	Cooldown time.Duration
	// Retries is how many times a request refused with 529 (or lost to a
	// transport error) is sent again, to another worker; 0: never.
	Retries int
	// MaxReplayBytes bounds the request body kept for retries: a larger
	// body is streamed to its worker and never retried. 0 means
	// DefaultMaxReplayBytes.
	MaxReplayBytes int64
	// Client sends the requests to the workers; nil means a client of
	// the Router's own that ignores HTTP_PROXY.
	Client *http.Client
	// Watch configures the load watcher (its Client, Expiry, Logger).
	Watch watch.Options
	// Logger receives the router's own events; nil means none.
	Logger *slog.Logger
}

// Router is the push router; it is an http.Handler. Run follows the
// workers' load; ServeHTTP routes. Both are safe together, from any
// goroutine.
type Router struct {
	policy    Policy
	retries   int
	maxReplay int64
	client    *http.Client
	ownClient bool
	log       *slog.Logger
	watcher   *watch.Watcher
	marks     *marks
	cooldown  time.Duration
	workers   []*workerState // in Options order
	byName    map[string]*workerState
	running   atomic.Bool
	next      atomic.Uint64 // round-robin position, and tie-breaker for PolicyLoad
	counters  counters
}

// New checks opts, applies the defaults and returns a Router. It starts
// nothing: Run does. It fails with every problem in opts, joined.
func New(opts Options) (*Router, error) {
	var errs []error
	if opts.Policy == "" {
		opts.Policy = PolicyLoad
	}
	if opts.Policy != PolicyLoad && opts.Policy != PolicyRoundRobin {
		errs = append(errs, fmt.Errorf("router: policy %q: want load or roundrobin", opts.Policy))
	}
	if opts.Cooldown < 0 || opts.Retries < 0 || opts.MaxReplayBytes < 0 {
		errs = append(errs, fmt.Errorf("router: cooldown %s, retries %d and max replay bytes %d must not be negative",
			opts.Cooldown, opts.Retries, opts.MaxReplayBytes))
	}
	w, err := watch.New(opts.Watch)
	if err != nil {
		errs = append(errs, fmt.Errorf("router: %w", err))
	}
	r := &Router{
		policy: opts.Policy, retries: opts.Retries, maxReplay: cmpOr(opts.MaxReplayBytes, DefaultMaxReplayBytes),
		client: opts.Client, log: opts.Logger, watcher: w, cooldown: cmpOr(opts.Cooldown, DefaultCooldown),
		byName: make(map[string]*workerState),
	}
	r.marks = newMarks(r.cooldown)
	for _, wk := range opts.Workers {
		if err := r.addWorker(wk); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if r.client == nil {
		r.client = &http.Client{Transport: newTransport()}
		r.ownClient = true
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

func (r *Router) addWorker(wk Worker) error {
	if wk.Name == "" {
		return errors.New("router: a worker without a name")
	}
	if err := wk.validate(); err != nil {
		return fmt.Errorf("router: worker %s: %w", wk.Name, err)
	}
	if r.byName[wk.Name] != nil {
		return fmt.Errorf("router: worker %s given twice", wk.Name)
	}
	if r.watcher != nil {
		if err := r.watcher.Add(wk.Name, wk.Admin); err != nil {
			return fmt.Errorf("router: worker %s: %w", wk.Name, err)
		}
	}
	ws := &workerState{Worker: wk}
	r.workers = append(r.workers, ws)
	r.byName[wk.Name] = ws
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// newTransport is the router's own: never an environment proxy, and room
// for as many idle connections per worker as a burst keeps open.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConnsPerHost = 256
	t.DisableCompression = true // pass the client's Accept-Encoding through, untouched
	return t
}

// Run follows the workers' load streams and counts their busy flips until
// ctx ends. It returns nil once every goroutine it started has ended. Run
// may be called once.
func (r *Router) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("router: Run called twice")
	}
	watched := make(chan error, 1)
	go func() { watched <- r.watcher.Run(ctx) }()
	r.countFlips(ctx)
	err := <-watched
	if r.ownClient {
		r.client.CloseIdleConnections()
	}
	return err
}

// countFlips counts each worker's turns from not busy to busy, as the
// watcher reports them, until ctx ends. Changed fires on every busy flip,
// so none is missed unless it flipped back before this loop read it.
func (r *Router) countFlips(ctx context.Context) {
	for {
		changed := r.watcher.Changed()
		for _, ws := range r.workers {
			st, _ := r.watcher.Status(ws.Name)
			busy := st.State == watch.Fresh && st.Busy
			if busy && !ws.lastBusy {
				ws.busyFlips.Add(1)
			}
			ws.lastBusy = busy
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
